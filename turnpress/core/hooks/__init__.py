"""What each hook's answers must be, one module per hook (DESIGN §3).

Every module here holds one hook's class: the :class:`~turnpress.core.registry.Registry`
methods that call that hook, check what plugins answer and guard what a third-party
plugin registered (a renderer that raises, a reader that crashes). The hook
specifications themselves are in :mod:`turnpress.core.hookspecs`; plugin loading is in
:mod:`turnpress.core.plugin_loading`. To add a hook: a spec in ``hookspecs``, a module
here with its class, and that class among ``Registry``'s bases.
"""
