"""A data-migration audit paging through customer records (64 turns).

480 customers moved from a legacy CRM to a new billing system. The agent pages through
the legacy records (24 pages of 20, about 5,000 characters a page), compares each page
with the migrated records, reviews the planned changes, then writes them: updates,
creates for records that were never migrated, and flags for what it must not fix itself
(balances, retired plans, locked records). It finishes with an email report.
"""

# ruff: noqa: E501  (the scripted programs are data: their lines are as an agent wrote them)
from __future__ import annotations

import random
from typing import Any

from turnpress import Tool

from . import LongRun

PAGE_SIZE = 20
PAGES = 24
FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hiroshi", "Ines",
         "Jonas", "Keiko", "Luis", "Maren", "Nadia", "Oskar", "Priya", "Quentin", "Rosa",
         "Sven", "Tamar", "Umar", "Vera", "Wen", "Yusuf", "Zofia"]
LAST = ["Abernathy-Whitfield", "Bergström", "Castellanos", "Dubois", "Esposito",
        "Fitzgerald-Okafor", "García", "Hoffmann", "Ivanova", "Jankowski", "Kowalczyk",
        "Lindqvist", "Montgomery-Reyes", "Nakamura", "Oyelaran", "Petrović", "Quispe",
        "Rasmussen", "Santos", "Tanaka", "Uzun", "Vasquez", "Wójcik", "Yamamoto", "Zimmermann"]


def _customers() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The legacy records and the migrated ones (by id), with the migration's mistakes."""
    rnd = random.Random(480)
    plans = {"BAS": "basic", "PRO": "professional", "ENT": "enterprise"}
    legacy, migrated = [], {}
    for i in range(PAGE_SIZE * PAGES):
        first, last = rnd.choice(FIRST), rnd.choice(LAST)
        cid = f"C-{10000 + i * 7}"
        digits = f"{rnd.randint(200, 989)}{rnd.randint(200, 999)}{rnd.randint(1000, 9999)}"
        phone = rnd.choice([f"+1 ({digits[:3]}) {digits[3:6]}-{digits[6:]}",
                            f"{digits[:3]}.{digits[3:6]}.{digits[6:]}", f"1{digits}"])
        email = f"{first}.{last.split('-')[0]}{rnd.randint(1, 99)}@example.org"
        email = email.replace("ö", "o").replace("í", "i").replace("ć", "c").replace("ó", "o")
        plan = rnd.choice(["BAS", "BAS", "PRO", "PRO", "ENT"])
        if i // PAGE_SIZE >= 9 and rnd.random() < 0.06:
            plan = "LEG"
        rec = {"cust_no": cid, "full_name": f"{first} {last}",
               "email_addr": (rnd.choice([email, email.upper(), f" {email}"])
                              if not (i // PAGE_SIZE == 5 and i % PAGE_SIZE == 13) else None),
               "phone_no": phone, "plan_code": plan,
               "country_cd": rnd.choice(["us", "us", "ca", "gb", "de", "fr"]),
               "balance_cents": rnd.choice([0, 0, rnd.randint(100, 250000)]),
               "created": f"20{rnd.randint(12, 23)}-{rnd.randint(1, 12):02d}-"
                          f"{rnd.randint(1, 28):02d}"}
        legacy.append(rec)
        if rnd.random() < 0.03:
            continue  # never migrated
        new = {"id": cid, "name": rec["full_name"],
               "email": (rec["email_addr"] or "").strip().lower() or None,
               "phone": f"+1{digits}", "plan": plans.get(plan, "basic"),
               "country": rec["country_cd"].upper(), "balance_cents": rec["balance_cents"],
               "migrated_at": f"2025-06-02T0{rnd.randint(1, 4)}:{rnd.randint(10, 59)}:00Z"}
        roll = rnd.random()
        if roll < 0.07 and plan != "BAS":
            new["plan"] = "basic"
        elif roll < 0.13 and len(new["name"]) > 20:
            new["name"] = new["name"][:20]
        elif roll < 0.17:
            new["balance_cents"] = rec["balance_cents"] + rnd.choice([-1, 1]) * rnd.randint(
                100, 5000)
        elif roll < 0.21 and rec["email_addr"]:
            new["email"] = f"{first.lower()}@old-mail.example.net"
        migrated[cid] = new
    return legacy, migrated


def _tools() -> dict[str, Tool]:
    legacy, migrated = _customers()
    locked = {legacy[8 * PAGE_SIZE + 8]["cust_no"]}  # C-11176, which page 9 updates
    writable = ("name", "email", "phone", "plan", "country")

    def list_legacy(page: int) -> dict[str, Any]:
        if not 1 <= page <= PAGES:
            raise ValueError(f"page {page} out of range 1..{PAGES}")
        return {"page": page, "pages": PAGES, "page_size": PAGE_SIZE,
                "records": legacy[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]}

    def get_migrated(ids: list[str]) -> list[dict[str, Any]]:
        if len(ids) > 50:
            raise ValueError(f"at most 50 ids per call, got {len(ids)}")
        return [dict(migrated[i]) for i in ids if i in migrated]

    def update_record(cid: str, fields: dict[str, Any]) -> dict[str, Any]:
        if cid not in migrated:
            raise ValueError(f"no migrated record {cid}; create it with create-record")
        if cid in locked:
            raise ValueError(f"record {cid} is locked by invoice run INV-5521 until 02:00 UTC; "
                             f"retry later or flag it")
        bad = [f for f in fields if f not in writable]
        if bad:
            raise ValueError(f"field {bad[0]!r} is not writable; writable fields: "
                             f"{', '.join(writable)}")
        migrated[cid].update(fields)
        return {"id": cid, "updated": sorted(fields), "version": 2}

    def create_record(record: dict[str, Any]) -> dict[str, Any]:
        if record.get("id") in migrated:
            raise ValueError(f"record {record['id']} already exists")
        migrated[record["id"]] = dict(record)
        return {"id": record["id"], "created": True}

    def flag_record(cid: str, reason: str) -> None:
        return None

    def send_email(to: str, subject: str, body: str) -> None:
        if "@" not in to:
            raise ValueError(f"invalid address {to!r}")

    return {
        "list-legacy": Tool("list-legacy", {"page": "integer"}, "map",
                            f"One page ({PAGE_SIZE} records) of legacy CRM customers: "
                            "{:page :pages :page_size :records}", list_legacy),
        "get-migrated": Tool("get-migrated", {"ids": "list"}, "list",
                             "The new system's records for up to 50 customer ids (missing "
                             "ids are left out)", get_migrated),
        "update-record": Tool("update-record", {"id": "string", "fields": "map"}, "map",
                              "Set fields of a migrated record (name, email, phone, plan, "
                              "country)", update_record),
        "create-record": Tool("create-record", {"record": "map"}, "map",
                              "Create a record in the new system", create_record),
        "flag-record": Tool("flag-record", {"id": "string", "reason": "string"}, "nil",
                            "Flag a record for manual review by the data team", flag_record),
        "send-email": Tool("send-email", {"to": "string", "subject": "string", "body": "string"},
                           "nil", "Send an email", send_email),
    }


REVIEW = """
(def legacy "Legacy records of the current page" (:records (tool/list-legacy {page})))
(def migrated "Their records in the new system"
  (tool/get-migrated (map #(get % "cust_no") legacy)))
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(show-plan {page} planned)
"""

APPLY = """
(apply-plan! planned)
(def audit (tally audit planned))
(println "page {page} applied;" (count (:update planned)) "updates,"
  (count (:create planned)) "creates," (count (:flag planned)) "flags. totals:" audit)
"""

REVIEW_PROSE = ["Page {page}: what would change?", "Next, page {page}.",
                "Reviewing page {page} before any write.", "Page {page} of 24.",
                "On to page {page}."]
APPLY_PROSE = ["The plan for page {page} looks right; applying it.",
               "Nothing unexpected on page {page}. Writing it.",
               "Page {page}'s changes are the usual kinds; applying.",
               "Applying page {page}.",
               "Those are fine: same kinds of drift as before. Applying page {page}."]


def migration_audit() -> LongRun:
    """The scripted run."""
    run = LongRun(
        name="migration-audit",
        mission=("Last night's migration moved every customer from the legacy CRM to the new "
                 "billing system. Audit all of them: page through the legacy records, compare "
                 "each with its migrated record, fix what differs, create records that were "
                 "never migrated, and flag for the data team whatever you must not change "
                 "yourself (balances are not writable). These are production writes: look at "
                 "each page's planned changes before you make them. Email a report to "
                 "{{report_to}} and return the totals."),
        data={
            "report_to": "data-team@example.com",
            "field_map": {"cust_no": "id", "full_name": "name", "email_addr": "email",
                          "phone_no": "phone", "plan_code": "plan", "country_cd": "country",
                          "balance_cents": "balance_cents"},
            "plans": {"BAS": "basic", "PRO": "professional", "ENT": "enterprise"},
        },
        tools=_tools(),
        max_turns=70,
    )
    s = run.say
    s("First a look at the legacy data: its shape and how many pages there are.", """
(let [first-page (tool/list-legacy 1)]
  (println "pages:" (:pages first-page) "page size:" (:page_size first-page))
  (doseq [r (take 5 (:records first-page))] (println r))
  (def legacy "Legacy records of the current page" (:records first-page)))
(println "field map:" data/field_map)
""")
    s("And the migrated versions of page 1, side by side with the legacy ones.", """
(def migrated "Their records in the new system"
  (tool/get-migrated (map #(get % "cust_no") legacy)))
(println (count migrated) "of" (count legacy) "migrated")
(doseq [[old new] (map vector legacy migrated)]
  (println "legacy:  " old)
  (println "migrated:" new))
""")
    s("A first diff: rename the legacy fields and compare field by field.", """
(defn renamed "A legacy record with the new system's field names" [old]
  (reduce-kv (fn [m k v] (assoc m (get data/field_map k k) v)) {} old))
(def compared-fields "Fields both systems hold"
  ["name" "email" "phone" "plan" "country" "balance_cents"])
(defn diff-record "Fields that differ: [{:field :want :have}]" [want have]
  (for [f compared-fields :when (not= (get want f) (get have f))]
    {:field f :want (get want f) :have (get have f)}))
(let [by-id (zipmap (map #(get % "id") migrated) migrated)]
  (doseq [old (take 8 legacy)]
    (println (get old "cust_no")
             (map :field (diff-record (renamed old) (get by-id (get old "cust_no")))))))
""")
    s("Almost every field differs only in form: plan codes vs names, phone formats, email "
      "case, country case. I compare what the new system should hold instead.", """
(defn digits "The last 10 digits of a phone number" [s]
  (join "" (take-last 10 (filter #(includes? "0123456789" %) s))))
(defn expected "The record the new system should hold for a legacy record" [old]
  {"id" (get old "cust_no") "name" (get old "full_name")
   "email" (lower-case (trim (get old "email_addr")))
   "phone" (str "+1" (digits (get old "phone_no")))
   "plan" (get data/plans (get old "plan_code"))
   "country" (upper-case (get old "country_cd"))
   "balance_cents" (get old "balance_cents")})
(let [by-id (zipmap (map #(get % "id") migrated) migrated)]
  (doseq [old legacy
          :let [d (diff-record (expected old) (get by-id (get old "cust_no")))]
          :when (and (get by-id (get old "cust_no")) (seq d))]
    (println (get old "cust_no") d))
  (println "missing:" (remove #(contains? by-id (get % "cust_no")) legacy)))
""")
    s("Real differences now. Plan: updates for writable fields, creates for missing "
      "records, flags for balances. A first write on page 1.", """
(defn plan-changes "Planned actions for a page: {:update [[id fields]] :create [records] :flag [[id reason]]}"
  [legacy migrated]
  (let [have (zipmap (map #(get % "id") migrated) migrated)]
    (reduce
      (fn [acc old]
        (let [want (expected old)
              id (get want "id")
              now (get have id)
              d (when now (diff-record want now))
              balance (first (filter #(= "balance_cents" (:field %)) d))
              fields (into {} (for [x d :when (not= "balance_cents" (:field x))]
                                [(:field x) (:want x)]))]
          (cond-> acc
            (nil? now) (update :create conj want)
            balance (update :flag conj [id (str "balance differs: legacy " (:want balance)
                                                " migrated " (:have balance))])
            (seq fields) (update :update conj [id fields]))))
      {:update [] :create [] :flag []}
      legacy)))
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(println planned)
""", fails="undefined_symbol")
    s("No cond-> here. The same with plain lets and ifs.", """
(defn plan-changes "Planned actions for a page: {:update [[id fields]] :create [records] :flag [[id reason]]}"
  [legacy migrated]
  (let [have (zipmap (map #(get % "id") migrated) migrated)]
    (reduce
      (fn [acc old]
        (let [want (expected old)
              id (get want "id")
              now (get have id)
              d (if now (diff-record want now) [])
              balance (first (filter #(= "balance_cents" (:field %)) d))
              fields (into {} (for [x d :when (not= "balance_cents" (:field x))]
                                [(:field x) (:want x)]))
              acc (if now acc (update acc :create conj want))
              acc (if balance (update acc :flag conj
                                      [id (str "balance differs: legacy " (:want balance)
                                               " migrated " (:have balance))])
                      acc)]
          (if (seq fields) (update acc :update conj [id fields]) acc)))
      {:update [] :create [] :flag []}
      legacy)))
(defn show-plan "Prints a page's planned changes, one line each" [page plan]
  (println "page" page ":" (count (:update plan)) "updates," (count (:create plan)) "creates,"
           (count (:flag plan)) "flags")
  (doseq [[id fields] (:update plan)] (println "  update" id fields))
  (doseq [r (:create plan)] (println "  create" (get r "id") (get r "name")))
  (doseq [[id why] (:flag plan)] (println "  flag" id why)))
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(show-plan 1 planned)
""")
    s("Names cut at 20 characters, plans downgraded to basic, old emails: all writable. "
      "Applying page 1.", """
(defn apply-plan! "Writes a page's planned changes with the tools" [plan]
  (doseq [[id fields] (:update plan)] (tool/update-record id fields))
  (doseq [r (:create plan)] (tool/create-record r))
  (doseq [[id why] (:flag plan)] (tool/flag-record id why)))
(defn tally "Adds a page's planned changes to the running totals" [totals plan]
  (merge-with + totals {:pages 1 :records (count legacy) :updated (count (:update plan))
                        :created (count (:create plan)) :flagged (count (:flag plan))}))
(apply-plan! planned)
(def audit "Running totals of the audit" (tally {} planned))
(println "page 1 applied. totals:" audit)
""")
    pages = iter(range(2, PAGES + 1))
    events: dict[int, Any] = {}

    def page_turns(page: int) -> None:
        s(REVIEW_PROSE[page % len(REVIEW_PROSE)].format(page=page),
          REVIEW.format(page=page))
        if page in events:
            events[page]()
        else:
            s(APPLY_PROSE[page % len(APPLY_PROSE)].format(page=page), APPLY.format(page=page))

    for page in pages:
        if page == 6:
            s("Page 6.", REVIEW.format(page=6), fails="type_error")
            s("A legacy record without an email: trim got nil. expected must keep a missing "
              "email missing.", """
(defn expected "The record the new system should hold for a legacy record (nil email stays nil)"
  [old]
  {"id" (get old "cust_no") "name" (get old "full_name")
   "email" (when-let [e (get old "email_addr")] (lower-case (trim e)))
   "phone" (str "+1" (digits (get old "phone_no")))
   "plan" (get data/plans (get old "plan_code"))
   "country" (upper-case (get old "country_cd"))
   "balance_cents" (get old "balance_cents")})
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(show-plan 6 planned)
(println "records without email:" (map #(get % "cust_no") (remove #(get % "email_addr") legacy)))
""")
            s(APPLY_PROSE[1].format(page=6), APPLY.format(page=6))
        elif page == 9:
            s(REVIEW_PROSE[9 % 5].format(page=9), REVIEW.format(page=9))
            s(APPLY_PROSE[9 % 5].format(page=9), APPLY.format(page=9), fails="tool_error")
            s("One record is locked by an invoice run, and apply-plan! stopped there: the "
              "updates before it were written. I flag the locked one and write only what "
              "comes after it.", """
(def locked-id "The record locked by invoice run INV-5521" "C-11176")
(def done-ids "Updates of page 9 written before the lock stopped the run"
  (set (map first (take-while #(not= locked-id (first %)) (:update planned)))))
(def remaining "Page 9's changes not yet written"
  {:update (remove #(or (contains? done-ids (first %)) (= locked-id (first %))) (:update planned))
   :create (:create planned)
   :flag (conj (:flag planned) [locked-id "locked by invoice run INV-5521 during the audit; fields to fix: "])})
(show-plan 9 remaining)
""")
            s("The flag should say which fields; fixing the reason, then applying.", """
(def remaining "Page 9's changes not yet written"
  (assoc remaining :flag
    (conj (:flag planned)
          [locked-id (str "locked by invoice run INV-5521 during the audit; fields to fix: "
                          (second (first (filter #(= locked-id (first %)) (:update planned)))))])))
(apply-plan! remaining)
(def audit (tally audit planned))
(println "page 9 applied (" (count done-ids) "before the lock); totals:" audit)
""")
        elif page == 11:
            s(REVIEW_PROSE[0].format(page=11), REVIEW.format(page=11))
            s("Some records have plan code LEG, which data/plans does not know: expected "
              "gives a nil plan and the plan would be wiped. Which records?", """
(doseq [r (filter #(= "LEG" (get % "plan_code")) legacy)]
  (println (get r "cust_no") (get r "full_name") (get r "created") "->"
           (get (first (filter #(= (get r "cust_no") (get % "id")) migrated)) "plan")))
""")
            s("Retired legacy plans need a human decision. plan-changes flags a record with an "
              "unknown plan code instead of updating its plan.", """
(defn plan-changes "Planned actions for a page: {:update [[id fields]] :create [records] :flag [[id reason]]}; unknown plan codes are flagged, not written"
  [legacy migrated]
  (let [have (zipmap (map #(get % "id") migrated) migrated)]
    (reduce
      (fn [acc old]
        (let [want (expected old)
              id (get want "id")
              now (get have id)
              retired (nil? (get want "plan"))
              want (if retired (assoc want "plan" (get now "plan" "basic")) want)
              d (if now (diff-record want now) [])
              balance (first (filter #(= "balance_cents" (:field %)) d))
              fields (into {} (for [x d :when (not= "balance_cents" (:field x))]
                                [(:field x) (:want x)]))
              acc (if now acc (update acc :create conj want))
              acc (if retired (update acc :flag conj
                                      [id (str "retired legacy plan " (get old "plan_code")
                                               ", migrated as " (get want "plan"))])
                      acc)
              acc (if balance (update acc :flag conj
                                      [id (str "balance differs: legacy " (:want balance)
                                               " migrated " (:have balance))])
                      acc)]
          (if (seq fields) (update acc :update conj [id fields]) acc)))
      {:update [] :create [] :flag []}
      legacy)))
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(show-plan 11 planned)
""")
            s(APPLY_PROSE[0].format(page=11), APPLY.format(page=11))
        elif page == 13:
            page_turns(13)
            s("Halfway. Which kinds of fixes have I made, and are the flags piling up on "
              "a few causes?", """
(println "totals after 13 pages:" audit)
(println "share of records changed:"
  (format "%.1f%%" (* 100.0 (/ (+ (:updated audit) (:created audit)) (:records audit)))))
(println "last page's flags:")
(doseq [[id why] (:flag planned)] (println " " id why))
""")
        elif page == 15:
            s(REVIEW_PROSE[0].format(page=15), REVIEW.format(page=15))
            s(APPLY_PROSE[0].format(page=15), """
(apply-plan! planed)
(def audit (tally audit planned))
""", fails="undefined_symbol")
            s("Typo; nothing was written.", APPLY.format(page=15))
        elif page == 18:
            s(REVIEW_PROSE[18 % 5].format(page=18), """
(def legacy "Legacy records of the current page" (:records (tool/list-legacy 18)))
(def migrated "Their records in the new system"
  (tool/get-migrated (map #(get % "cust_no") legacy)))
(def planned "Planned changes for the current page" (plan-changes legacy))
(show-plan 18 planned)
""", fails="arity_error")
            s("plan-changes takes the migrated records too.", """
(def planned "Planned changes for the current page" (plan-changes legacy migrated))
(show-plan 18 planned)
""")
            s(APPLY_PROSE[18 % 5].format(page=18), APPLY.format(page=18))
        else:
            page_turns(page)
    s("All 24 pages are done. Before reporting, I check the writes took: page 1's updated "
      "records, read back.", """
(def page-one "Legacy records of page 1" (:records (tool/list-legacy 1)))
(def recheck "Migrated records of page 1, read again"
  (tool/get-migrated (map #(get % "cust_no") page-one)))
(def still-planned "What page 1 would still change" (plan-changes page-one recheck))
(show-plan 1 still-planned)
""")
    s("Only the flagged balances remain, as they should. The report.", """
(def report "The report for the data team"
  (str "Migration audit of " (:records audit) " customers (" (:pages audit) " pages).\\n"
       "Updated: " (:updated audit) " records (names cut at 20 characters, plans downgraded "
       "to basic, stale emails).\\n"
       "Created: " (:created audit) " records that were never migrated.\\n"
       "Flagged for review: " (:flagged audit) " (balance differences, retired LEG plans, "
       locked-id " locked by invoice run INV-5521).\\n"
       "Balances were not changed: balance_cents is not writable."))
(tool/send-email data/report_to "Customer migration audit: results" report)
(println report)
""")
    s("Done.", """
(return audit)
""")
    return run
