"""Fixed-size records kept in order, in memory up to a bound and then on disk.

A comparison's per-prompt numbers (one record per prompt and strategy) are what its
``--json`` ``per_turn`` lists and the HTML report's charts show, but the driver needs
none of them to add up, bootstrap or recommend: those use per-run sums. So the
records go to a :class:`RecordStore`: appended as packed bytes, held in memory until
:data:`SPILL_BYTES`, then written to an anonymous temporary file (deleted when the
store goes, or when the process ends), and read back in order when an output wants
them. The driver's memory then stays flat however many runs are compared.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["READ_BYTES", "SPILL_BYTES", "RecordStore"]

SPILL_BYTES = 256 * 1024
"""Records held in memory before they go to the store's temporary file."""

READ_BYTES = 1024 * 1024
"""How much of the temporary file is read back at a time."""


class RecordStore:
    """Records of one ``struct`` format, appended and read back in order.

    ``append(*values)`` packs one record; iterating gives every record as a tuple, in
    the order appended (do not append while iterating). Past ``spill_bytes`` (default
    :data:`SPILL_BYTES`) of records in memory, they go to the file. When the temporary
    file cannot be created (no writable temporary directory), they stay in memory.
    """

    def __init__(self, fmt: str, *, spill_bytes: int | None = None) -> None:
        self._struct = struct.Struct(fmt)
        self._buffer = bytearray()
        self._file: IO[bytes] | None = None
        self._on_disk = 0
        self._count = 0
        self._spill = SPILL_BYTES if spill_bytes is None else spill_bytes

    @property
    def format(self) -> str:
        """The ``struct`` format of one record."""
        return self._struct.format

    @property
    def on_disk(self) -> int:
        """How many bytes of records are in the temporary file (the rest are in memory)."""
        return self._on_disk

    def append(self, *values: Any) -> None:
        """Add one record (its fields in the format's order)."""
        self._buffer += self._struct.pack(*values)
        self._count += 1
        if len(self._buffer) >= self._spill:
            self._write_out()

    def _write_out(self) -> None:
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile()
            except OSError:  # no writable temporary directory: keep the records here
                self._spill = 1 << 62
                return
        self._file.seek(self._on_disk)
        self._file.write(self._buffer)
        self._file.flush()
        self._on_disk += len(self._buffer)
        self._buffer.clear()

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        size = self._struct.size
        if self._file is not None and self._on_disk:
            step = max(size, READ_BYTES // size * size)
            for offset in range(0, self._on_disk, step):
                self._file.seek(offset)
                chunk = self._file.read(min(step, self._on_disk - offset))
                yield from self._struct.iter_unpack(chunk)
        if self._buffer:
            yield from self._struct.iter_unpack(bytes(self._buffer))

    def to_bytes(self) -> bytes:
        """Every record, packed, as one ``bytes`` (what a pickle of the store holds)."""
        if self._file is None or not self._on_disk:
            return bytes(self._buffer)
        self._file.seek(0)
        return self._file.read(self._on_disk) + bytes(self._buffer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordStore):
            return NotImplemented
        return self.format == other.format and self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return {"format": self.format, "data": self.to_bytes(), "spill": self._spill}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["format"], spill_bytes=state["spill"])  # type: ignore[misc]
        self._buffer += state["data"]
        self._count = len(state["data"]) // self._struct.size
        if len(self._buffer) >= self._spill:
            self._write_out()

    def __repr__(self) -> str:
        where = f", {self._on_disk} bytes on disk" if self._on_disk else ""
        return f"RecordStore({self.format!r}, {self._count} records{where})"

    def close(self) -> None:
        """Drop the records and the temporary file (the store is empty afterwards)."""
        if self._file is not None:
            self._file.close()
        self._file, self._on_disk, self._count = None, 0, 0
        self._buffer.clear()
