# ruff: noqa: E501  (the scripted programs are data: their lines are as an agent wrote them)
"""A support-queue cleanup with side effects (100+ turns).

120 open tickets, read three at a time (each thread 1,000-3,000 characters). The agent
closes what customers confirmed fixed (with a closing reply), merges duplicates into the
earliest ticket, escalates billing disputes by email, reassigns tickets of agents who
left, and nudges stale ones. Along the way it meets an agent without a successor, a
duplicate of an already closed ticket, a reply in German, a deleted ticket and its own
typos, and recovers from each.
"""

from __future__ import annotations

import random
from typing import Any

from turnpress import Tool

from . import LongRun

N_TICKETS = 120
PAGE = 30
BATCH = 3
AGENTS = ["a.chen", "b.okoro", "c.meyer", "d.silva", "e.kim", "j.doe", "m.ruiz", "k.lund"]
DEPARTED = ["j.doe", "m.ruiz", "k.lund"]
SUBJECTS = ["Cannot export invoices to CSV", "SSO login loops back to the sign-in page",
            "Webhook deliveries delayed by hours", "Charged twice for the March invoice",
            "API returns 429 below our rate limit", "Dashboard charts are empty",
            "Refund for unused seats", "Password reset email never arrives",
            "Mobile app crashes on upload", "Custom domain certificate expired",
            "Audit log export is missing events", "Overcharged after downgrading plan"]
CUSTOMERS = [f"{n}.example.com" for n in ["acme", "globex", "initech", "umbrella", "hooli",
                                           "vandelay", "stark", "wayne", "wonka", "tyrell",
                                           "cyberdyne", "soylent", "aperture", "oscorp",
                                           "gringotts", "monarch"]]
FILLER = ["We rely on this every day for our month-end reporting, so it is blocking the "
          "finance team.", "I attached the HAR file and two screenshots from Chrome 124 on "
          "macOS 14.4.", "This started after your maintenance window on Tuesday night.",
          "Our account ID is on file; the workspace is the production one, not staging.",
          "Three other colleagues see exactly the same behaviour from different networks.",
          "Could you please look into this as soon as possible? Our auditors are waiting.",
          "We already tried clearing caches, another browser and an incognito window.",
          "The request IDs from yesterday are 7f3c2a, 9b1e44 and 0c7d19 if that helps."]
AGENT_REPLIES = ["Thanks for the details. I have reproduced the problem and passed it to our "
                 "engineering team with your request IDs.", "Could you try again now? We "
                 "deployed a fix for a related issue this morning.", "I am sorry for the "
                 "trouble. I have asked our specialists to look at your account settings.",
                 "Thank you for your patience; we are still investigating and will update "
                 "you within a day."]
RESOLVED = ["That fixed it, thank you!", "Works now, thanks a lot.", "Confirmed: the issue "
            "is resolved on our side.", "All good now, you can close this."]


def _tickets() -> list[dict[str, Any]]:
    """The open tickets, their threads and the cases the run must meet."""
    rnd = random.Random(4101)
    tickets: list[dict[str, Any]] = []
    for i in range(N_TICKETS):
        tid = f"T-{4101 + i}"
        customer = rnd.choice(CUSTOMERS)
        subject = rnd.choice(SUBJECTS)
        kind = rnd.choices(["resolved", "duplicate", "billing", "open"], [30, 10, 10, 50])[0]
        assignee = rnd.choice(AGENTS)
        forced = {6: ("open", "k.lund"), 3: ("resolved", "a.chen"), 19: ("duplicate", "e.kim"),
                  64: ("german", "c.meyer")}.get(i)
        if forced:
            kind, assignee = forced
        if kind == "billing":
            subject = rnd.choice([s for s in SUBJECTS if "harged" in s or "Refund" in s])
        if assignee == "k.lund" and i != 6:
            assignee = "j.doe"
        if kind == "duplicate":
            earlier = [t for t in tickets if t["id"] != tid]
            base = tickets[3] if i == 19 else (rnd.choice(earlier) if earlier else None)
            if base is None:
                kind = "open"
            else:
                customer, subject = base["customer"].removeprefix("ops@"), base["subject"]
        if i == 19:
            assignee = "e.kim"
        day = 1 + i * 28 // N_TICKETS
        msgs = [{"from": f"ops@{customer}", "at": f"2025-05-{day:02d}T09:{rnd.randint(10, 59)}",
                 "body": f"{subject}. " + " ".join(rnd.sample(FILLER, 3))}]
        for k in range(rnd.randint(1, 3)):
            msgs.append({"from": assignee, "at": f"2025-05-{day + k + 1:02d}T14:{rnd.randint(10, 59)}",
                         "body": rnd.choice(AGENT_REPLIES) + " " + rnd.choice(FILLER)})
            msgs.append({"from": f"ops@{customer}", "at": f"2025-05-{day + k + 1:02d}T16:{rnd.randint(10, 59)}",
                         "body": " ".join(rnd.sample(FILLER, 2))})
        last = msgs[-1]
        if kind == "resolved":
            last["body"] = rnd.choice(RESOLVED) + " " + last["body"]
        elif kind == "german":
            last["body"] = ("Funktioniert jetzt, danke! Das Problem ist seit heute Morgen "
                            "behoben. " + last["body"])
        elif kind == "billing":
            last["body"] = ("We were charged twice and want a refund of the duplicate "
                            "charge. " + last["body"])
        tags = sorted({rnd.choice(["web", "api", "mobile", "sso"]),
                       *(["billing"] if kind == "billing" or "harged" in subject else [])})
        tickets.append({"id": tid, "subject": subject, "customer": f"ops@{customer}",
                        "assignee": assignee, "status": "open", "tags": tags,
                        "updated": last["at"][:10], "messages": msgs})
    return tickets


def _tools() -> dict[str, Tool]:
    tickets = {t["id"]: t for t in _tickets()}
    deleted = {"T-4180"}
    active = [a for a in AGENTS if a not in DEPARTED] + ["billing-queue"]

    def summary(t: dict[str, Any]) -> dict[str, Any]:
        return {k: t[k] for k in ("id", "subject", "customer", "assignee", "tags", "updated")}

    def list_tickets(status: str, page: int) -> dict[str, Any]:
        items = [t for t in tickets.values() if t["status"] == status]
        pages = max(1, (len(items) + PAGE - 1) // PAGE)
        if not 1 <= page <= pages:
            raise ValueError(f"page {page} out of range: {pages} pages of {status} tickets")
        return {"page": page, "pages": pages, "total": len(items),
                "tickets": [summary(t) for t in items[(page - 1) * PAGE: page * PAGE]]}

    def get_ticket(tid: str) -> dict[str, Any]:
        if tid in deleted:
            tickets[tid]["status"] = "deleted"
            raise ValueError(f"ticket {tid} was deleted by the customer's admin")
        if tid not in tickets:
            raise ValueError(f"no ticket {tid}")
        return tickets[tid]

    def reply_ticket(tid: str, body: str) -> None:
        get_ticket(tid)["messages"].append({"from": "support-bot", "at": "2025-06-06T10:00",
                                            "body": body})

    def close_ticket(tid: str, resolution: str) -> dict[str, Any]:
        t = get_ticket(tid)
        if t["status"] != "open":
            raise ValueError(f"ticket {tid} is already {t['status']}")
        t["status"] = "closed"
        return {"id": tid, "status": "closed", "resolution": resolution}

    def merge_tickets(target: str, sources: list[str]) -> dict[str, Any]:
        into = get_ticket(target)
        if into["status"] != "open":
            raise ValueError(f"cannot merge into {target}: it is {into['status']}")
        for s in sources:
            get_ticket(s)["status"] = "merged"
        return {"id": target, "merged": sources}

    def assign_ticket(tid: str, agent: Any) -> dict[str, Any]:
        if agent not in active:
            raise ValueError(f"no active agent {agent!r}; active agents: {', '.join(active)}")
        get_ticket(tid)["assignee"] = agent
        return {"id": tid, "assignee": agent}

    def send_email(to: str, subject: str, body: str) -> None:
        if "@" not in to:
            raise ValueError(f"invalid address {to!r}")

    return {
        "list-tickets": Tool("list-tickets", {"status": "string", "page": "integer"}, "map",
                             f"One page ({PAGE}) of ticket summaries with a status: "
                             "{:page :pages :total :tickets}", list_tickets),
        "get-ticket": Tool("get-ticket", {"id": "string"}, "map",
                           "A ticket with its whole message thread", get_ticket),
        "reply-ticket": Tool("reply-ticket", {"id": "string", "body": "string"}, "nil",
                             "Post a reply to the customer", reply_ticket),
        "close-ticket": Tool("close-ticket", {"id": "string", "resolution": "string"}, "map",
                             "Close an open ticket", close_ticket),
        "merge-tickets": Tool("merge-tickets", {"target": "string", "sources": "list"}, "map",
                              "Merge tickets into an open target ticket", merge_tickets),
        "assign-ticket": Tool("assign-ticket", {"id": "string", "agent": "string"}, "map",
                              "Assign a ticket to an active agent or queue", assign_ticket),
        "send-email": Tool("send-email", {"to": "string", "subject": "string", "body": "string"},
                           "nil", "Send an internal email", send_email),
    }


READ = """
(def batch "The tickets being worked on" (map #(tool/get-ticket %) (next-ids)))
(show-batch batch)
"""
ACT = """
(def done (into done (map act! batch)))
(println "done" (count done) "of" (count queue) "-" (frequencies (vals done)))
"""
READ_PROSE = ["Next three tickets.", "The next batch.", "Reading on.", "Three more.",
              "Next batch from the queue.", "Continuing with the queue."]
ACT_PROSE = ["The classifications look right; acting on them.", "Acting on this batch.",
             "Nothing unusual here. Carrying out the actions.", "Those are correct; go.",
             "As classified: acting.", "Applying the actions for these three."]


def support_queue() -> LongRun:
    """The scripted run."""
    run = LongRun(
        name="support-queue-cleanup",
        mission=("Clean up the open support queue before the weekend. For every open ticket: "
                 "if the customer confirmed the problem is solved, reply with the closing "
                 "note and close it; merge a duplicate (same customer, same subject) into "
                 "the earliest ticket; escalate a billing dispute (refunds, double charges) "
                 "to {{billing_team}} and assign it to billing-queue; reassign tickets of "
                 "agents who left to their successor. Check what the classification does on "
                 "each batch before acting. Email a summary to {{support_lead}} and return "
                 "the counts per action."),
        data={
            "billing_team": "billing@example.com",
            "support_lead": "lead@example.com",
            "departed": DEPARTED,
            "successors": {"j.doe": "a.chen", "m.ruiz": "d.silva"},
            "team_lead": "b.okoro",
            "resolved_phrases": ["that fixed it", "works now", "is resolved", "all good now"],
            "closing_note": ("Glad to hear it is working. I am closing this ticket; reply to "
                             "it any time to reopen it."),
        },
        tools=_tools(),
        max_turns=110,
    )
    s = run.say
    s("First the size and shape of the queue. I keep a compact index of it: id -> "
      "\"customer | subject\", which is all duplicate detection needs.", """
(defn index-page "id -> \\"customer | subject\\" for a page of summaries" [page]
  (into {} (map (fn [t] [(:id t) (str (:customer t) " | " (:subject t))]) (:tickets page))))
(let [first-page (tool/list-tickets "open" 1)]
  (println "open tickets:" (:total first-page) "pages:" (:pages first-page))
  (doseq [t (:tickets first-page)]
    (println (:id t) (:updated t) (:assignee t) (:customer t) "-" (:subject t) (:tags t)))
  (def pages "Pages of open tickets" (:pages first-page))
  (def queue "Every open ticket: id -> \\"customer | subject\\"" (index-page first-page)))
""")
    s("The rest of the index.", """
(def queue "Every open ticket: id -> \\"customer | subject\\""
  (reduce merge queue (map #(index-page (tool/list-tickets "open" %)) (range 2 (inc pages)))))
(println (count queue) "tickets indexed")
(println "most common subjects:"
  (take 5 (sort-by #(- (second %)) (frequencies (map #(second (split % " | ")) (vals queue))))))
(println "customers with several tickets:"
  (filter #(> (second %) 2) (frequencies (map #(first (split % " | ")) (vals queue)))))
""")
    s("Now the classification and a batch reader. I work three tickets at a time.", """
(def done "Ticket id -> action taken" {})
(defn next-ids "The next three ticket ids not yet handled" []
  (take 3 (remove #(contains? done %) (sort (keys queue)))))
(defn last-customer-msg "The customer's last message in a ticket" [t]
  (last (filter #(= (:from %) (:customer t)) (:messages t))))
(defn duplicate-of "The earliest other open ticket with the same customer and subject, or nil" [t]
  (let [k (str (:customer t) " | " (:subject t))]
    (first (sort (for [[id v] queue :when (and (= v k) (< (compare id (:id t)) 0))] id)))))
(defn classify "What to do with a ticket: :resolved :duplicate :billing :reassign or :keep" [t]
  (let [text (lower-case (:body (last-customer-msg t)))]
    (cond
      (some #(includes? text %) data/resolved_phrases) :resolved
      (duplicate-of t) :duplicate
      (and (some #(= "billing" %) (:tags t))
           (some #(includes? text %) ["refund" "charged twice" "overcharged"])) :billing
      (some #(= (:assignee t) %) data/departed) :reassign
      :else :keep)))
(defn show-batch "Prints each ticket of a batch with its classification" [batch]
  (doseq [t batch]
    (println (:id t) (:assignee t) (:customer t) "-" (:subject t) "=>" (classify t))
    (println "   last:" (subs (:body (last-customer-msg t)) 0
                              (min 160 (count (:body (last-customer-msg t))))))))
(def batch "The tickets being worked on" (map #(tool/get-ticket %) (next-ids)))
(show-batch batch)
""")
    s("Now the actions themselves, one tool sequence per class.", """
(defn act! "Carries out the action for a ticket; returns [id action]" [t]
  (let [id (:id t)]
    (case (classify t)
      :resolved (do (tool/reply-ticket id data/closing_note)
                    (tool/close-ticket id "confirmed resolved by the customer")
                    [id :closed])
      :duplicate (do (tool/merge-tickets (duplicate-of t) [id]) [id :merged])
      :billing (do (tool/send-email data/billing_team (str "Billing dispute " id ": " (:subject t))
                                    (str (:customer t) " writes: " (:body (last-customer-msg t))))
                   (tool/assign-ticket id "billing-queue")
                   [id :escalated])
      :reassign (do (tool/assign-ticket id (get data/successors (:assignee t))) [id :reassigned])
      [id :kept])))
""" + ACT)
    batch_no = 1
    handled = BATCH
    while handled < N_TICKETS:
        batch_no += 1
        b = batch_no
        handled += BATCH
        if b == 3:
            s(READ_PROSE[b % 6], READ)
            s(ACT_PROSE[b % 6], ACT, fails="tool_error")
            s("k.lund left and has no successor in data/successors. The team lead takes "
              "tickets of departed agents without one; act! is redefined, and the batch "
              "rerun only for the tickets not yet done.", """
(defn successor "Who takes over a departed agent's tickets" [agent]
  (get data/successors agent data/team_lead))
(defn act! "Carries out the action for a ticket; returns [id action]" [t]
  (let [id (:id t)]
    (case (classify t)
      :resolved (do (tool/reply-ticket id data/closing_note)
                    (tool/close-ticket id "confirmed resolved by the customer")
                    [id :closed])
      :duplicate (do (tool/merge-tickets (duplicate-of t) [id]) [id :merged])
      :billing (do (tool/send-email data/billing_team (str "Billing dispute " id ": " (:subject t))
                                    (str (:customer t) " writes: " (:body (last-customer-msg t))))
                   (tool/assign-ticket id "billing-queue")
                   [id :escalated])
      :reassign (do (tool/assign-ticket id (successor (:assignee t))) [id :reassigned])
      [id :kept])))
(def done (into done (map act! (drop-while #(not= "T-4107" (:id %)) batch))))
(println "done" (count done) "of" (count queue) "-" (frequencies (vals done)))
""")
        elif b == 7:
            s(READ_PROSE[b % 6], READ)
            s(ACT_PROSE[b % 6], ACT, fails="tool_error")
            s("T-4120 duplicates T-4104, which I already closed as resolved: a merge into a "
              "closed ticket is refused. A duplicate of a closed ticket gets the closing "
              "note and is closed too.", """
(defn act-duplicate! "Merges a duplicate, or closes it when its original is closed" [t]
  (let [target (duplicate-of t)]
    (if (= :closed (get done target))
      (do (tool/reply-ticket (:id t) (str "This is the same issue as " target
                                          ", which was confirmed resolved. " data/closing_note))
          (tool/close-ticket (:id t) (str "duplicate of resolved " target))
          [(:id t) :closed])
      (do (tool/merge-tickets target [(:id t)]) [(:id t) :merged]))))
(defn act! "Carries out the action for a ticket; returns [id action]" [t]
  (let [id (:id t)]
    (case (classify t)
      :resolved (do (tool/reply-ticket id data/closing_note)
                    (tool/close-ticket id "confirmed resolved by the customer")
                    [id :closed])
      :duplicate (act-duplicate! t)
      :billing (do (tool/send-email data/billing_team (str "Billing dispute " id ": " (:subject t))
                                    (str (:customer t) " writes: " (:body (last-customer-msg t))))
                   (tool/assign-ticket id "billing-queue")
                   [id :escalated])
      :reassign (do (tool/assign-ticket id (successor (:assignee t))) [id :reassigned])
      [id :kept])))
(def done (into done (map act! (drop-while #(not= "T-4120" (:id %)) batch))))
(println "done" (count done) "of" (count queue) "-" (frequencies (vals done)))
""")
        elif b == 12:
            s(READ_PROSE[b % 6], READ)
            s(ACT_PROSE[b % 6], """
(def done (into done (map act! bacth)))
""", fails="undefined_symbol")
            s("Typo; nothing ran.", ACT)
        elif b == 16:
            s(READ_PROSE[b % 6], """
(def batch "The tickets being worked on" (map #(tool/get-ticket %) (next-ids)))
(doseq [t batch] (println (:id t) (:subject t) "=>" (classify t queue)))
""", fails="arity_error")
            s("classify takes only the ticket.", """
(show-batch batch)
""")
            s(ACT_PROSE[b % 6], ACT)
        elif b == 22:
            s(READ_PROSE[b % 6], READ)
            s("T-4165 says \"Funktioniert jetzt, danke!\": solved, but in German, so it was "
              "classified :keep. I add German and Spanish phrases and reclassify.", """
(def resolved-phrases "Phrases that mean the customer's problem is solved"
  (concat data/resolved_phrases ["funktioniert jetzt" "ist behoben" "ya funciona" "resuelto"]))
(defn classify "What to do with a ticket: :resolved :duplicate :billing :reassign or :keep" [t]
  (let [text (lower-case (:body (last-customer-msg t)))]
    (cond
      (some #(includes? text %) resolved-phrases) :resolved
      (duplicate-of t) :duplicate
      (and (some #(= "billing" %) (:tags t))
           (some #(includes? text %) ["refund" "charged twice" "overcharged"])) :billing
      (some #(= (:assignee t) %) data/departed) :reassign
      :else :keep)))
(show-batch batch)
(println "kept so far:" (map first (filter #(= :kept (second %)) done)))
""")
            s("Were earlier :kept tickets in another language too? The ones kept so far, "
              "rechecked.", """
(doseq [t (map #(tool/get-ticket (first %)) (filter #(= :kept (second %)) done))]
  (println (:id t) (classify t) "-" (subs (:body (last-customer-msg t)) 0 60)))
""")
            s("None of them. Acting on this batch.", ACT)
        elif b == 27:
            s(READ_PROSE[b % 6], READ, fails="tool_error")
            s("T-4180 was deleted by the customer; I record it and read the others.", """
(def done (assoc done "T-4180" :deleted))
(def batch "The tickets being worked on" (map #(tool/get-ticket %) (next-ids)))
(show-batch batch)
""")
            s(ACT_PROSE[b % 6], ACT)
        elif b == 33:
            s(READ_PROSE[b % 6], READ)
            s(ACT_PROSE[b % 6], ACT)
            s("Before the last batches: how long have the kept tickets waited? Those "
              "over two weeks get a nudge.", """
(def kept-tickets "Tickets kept open so far: id, subject, assignee, last update"
  (map #(select-keys (tool/get-ticket (first %)) [:id :subject :assignee :updated])
       (filter #(= :kept (second %)) done)))
(doseq [t kept-tickets] (println (:id t) (:updated t) (- 37 (:updated t))))
""", fails="type_error")
            s(":updated is a date string. Days since it, from its day of the month (all in "
              "May, today is June 6th).", """
(defn waited-days "Days from a 2025-05-DD date to June 6th" [date]
  (- 37 (parse-long (subs date 8 10))))
(def stale "Kept tickets not updated for two weeks or more"
  (filter #(>= (waited-days (:updated %)) 14) kept-tickets))
(doseq [t kept-tickets] (println (:id t) (:updated t) (waited-days (:updated t)) "days" (:assignee t)))
(println (count stale) "stale of" (count kept-tickets))
""")
            s("Nudging the stale ones: a short note asking whether the problem persists.", """
(doseq [t stale]
  (tool/reply-ticket (:id t) (str "Hello, we have not heard back about \\"" (:subject t)
                                  "\\". Is this still happening? If so, please reply with a "
                                  "recent example and we will pick it up right away.")))
(def done (into done (map (fn [t] [(:id t) :nudged]) stale)))
(println "nudged" (map :id stale))
""")
        else:
            s(READ_PROSE[b % 6], READ)
            if b % 5 == 0:
                s("Let me read the full thread of the first ticket here before acting.", """
(let [t (first batch)]
  (println (:id t) (:subject t) (:tags t) "assignee" (:assignee t))
  (doseq [m (:messages t)] (println (:at m) (:from m) ":" (:body m))))
""")
            s(ACT_PROSE[b % 6], ACT)
    s("The queue is worked through. What is still open now?", """
(def left "Open tickets after the cleanup" (tool/list-tickets "open" 1))
(println (:total left) "open tickets left," (:pages left) "pages")
(doseq [t (:tickets left)] (println (:id t) (:assignee t) "-" (:subject t)))
""")
    s("And the second page of what is left.", """
(doseq [t (:tickets (tool/list-tickets "open" 2))] (println (:id t) (:assignee t) "-" (:subject t)))
(println "left per assignee:" (frequencies (map :assignee (:tickets left))))
""")
    s("The summary for the support lead.", """
(def counts "Tickets per action" (frequencies (vals done)))
(tool/send-email data/support_lead "Support queue cleanup"
  (str "Worked through " (count done) " open tickets. Closed " (get counts :closed 0)
       ", merged " (get counts :merged 0) ", escalated to billing " (get counts :escalated 0)
       ", reassigned " (get counts :reassigned 0) ", nudged " (get counts :nudged 0)
       ", kept " (get counts :kept 0) ", deleted by customers " (get counts :deleted 0) "."))
(println counts)
""")
    s("Done.", """
(return (frequencies (vals done)))
""")
    return run
