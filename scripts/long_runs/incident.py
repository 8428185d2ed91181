"""Incident triage over paged service logs (32 turns).

Checkout errors spiked at 14:04 UTC. The logs of five services are read page by page
(each page about 6,000 characters); a payments-gateway deploy at 14:02 that shrank its
database pool is the cause, inventory's slow queries and auth's token errors are
red herrings. The agent files tickets, pages the on-call team and posts a status.
"""

# ruff: noqa: E501  (the scripted programs are data: their lines are as an agent wrote them)
from __future__ import annotations

import random
from typing import Any

from turnpress import Tool

from . import LongRun

PAGE_LINES = 60
DAY = "2025-03-11"


def _ts(minute: int, second: float) -> str:
    h, m = divmod(minute, 60)
    return f"{DAY}T{h:02d}:{m:02d}:{second:06.3f}Z"


def _logs() -> dict[str, list[str]]:
    """Every service's log lines from 13:50 to 14:40 UTC, in time order."""
    rnd = random.Random(20250311)
    deploy, rollback = 14 * 60 + 2, 14 * 60 + 33
    lines: dict[str, list[tuple[float, str]]] = {}

    def add(svc: str, minute: int, level: str, text: str) -> None:
        sec = rnd.uniform(0, 59.999)
        lines.setdefault(svc, []).append((minute * 60 + sec, f"{_ts(minute, sec)} {level} {svc} {text}"))

    def req() -> str:
        return f"req={rnd.getrandbits(32):08x}"

    paths = ["/api/checkout", "/api/checkout/confirm", "/api/cart/total", "/api/checkout/quote"]
    for n in range(300):
        minute = 13 * 60 + 50 + n * 50 // 300
        broken = deploy + 2 <= minute < rollback + 2
        if broken and rnd.random() < 0.55:
            add("checkout-api", minute, "ERROR",
                f"POST {rnd.choice(paths[:2])} 502 {req()} upstream=payments-gateway "
                f"latency_ms={rnd.randint(29950, 30050)} err=\"upstream timeout\"")
        elif broken and rnd.random() < 0.4:
            add("checkout-api", minute, "WARN",
                f"retrying payment authorization {req()} attempt={rnd.randint(2, 3)} "
                f"latency_ms={rnd.randint(9000, 15000)}")
        else:
            add("checkout-api", minute, "INFO",
                f"{rnd.choice(['POST', 'GET'])} {rnd.choice(paths)} 200 {req()} "
                f"latency_ms={rnd.randint(80, 420)}")
    add("payments-gateway", deploy, "INFO",
        "starting payments-gateway v2.14.0 (build 7781) pool.max_connections=5 pool.timeout_ms=30000")
    add("payments-gateway", rollback, "INFO",
        "starting payments-gateway v2.13.4 (build 7702) pool.max_connections=50 pool.timeout_ms=30000")
    for n in range(297):
        minute = 13 * 60 + 50 + n * 50 // 297
        broken = deploy < minute < rollback + 2
        if broken and rnd.random() < 0.45:
            add("payments-gateway", minute, "WARN",
                f"connection pool exhausted (5/5 in use, {rnd.randint(12, 90)} waiting) {req()}")
        elif broken and rnd.random() < 0.6:
            add("payments-gateway", minute, "ERROR",
                f"authorize failed {req()} err=\"timed out acquiring db connection after "
                f"30000ms\" latency_ms={rnd.randint(30000, 30020)}")
        else:
            add("payments-gateway", minute, "INFO",
                f"authorize ok {req()} card={rnd.choice(['visa', 'mc', 'amex'])} "
                f"latency_ms={rnd.randint(40, 260)} pool_in_use={rnd.randint(3, 31)}")
    for n in range(120):
        minute = 13 * 60 + 50 + n * 50 // 120
        if rnd.random() < 0.3:
            add("inventory", minute, "WARN",
                f"slow query {req()} took_ms={rnd.randint(1500, 2300)} "
                f"sql=\"SELECT sku, qty FROM stock WHERE warehouse_id = ? AND sku IN (...)\"")
        else:
            add("inventory", minute, "INFO", f"reserve ok {req()} skus={rnd.randint(1, 6)} "
                                             f"latency_ms={rnd.randint(20, 180)}")
    for n in range(120):
        minute = 13 * 60 + 50 + n * 50 // 120
        if rnd.random() < 0.12:
            add("auth", minute, "ERROR", f"token refresh failed {req()} client=mobile-ios "
                                         f"err=\"invalid_grant\"")
        else:
            add("auth", minute, "INFO", f"token issued {req()} client="
                                        f"{rnd.choice(['web', 'mobile-ios', 'mobile-android'])} "
                                        f"latency_ms={rnd.randint(5, 60)}")
    for n in range(60):
        minute = 13 * 60 + 50 + n * 50 // 60
        level, text = (("WARN", f"cache miss ratio {rnd.uniform(0.1, 0.2):.2f} over last minute")
                       if rnd.random() < 0.2 else
                       ("INFO", f"cart updated {req()} items={rnd.randint(1, 9)}"))
        add("cart", minute, level, text)
    return {svc: [text for _, text in sorted(items)] for svc, items in lines.items()}


def _tools() -> dict[str, Tool]:
    logs = _logs()
    pages = {svc: (len(items) + PAGE_LINES - 1) // PAGE_LINES for svc, items in logs.items()}
    tickets: list[dict[str, Any]] = []
    deploys = [
        {"id": "dep-8790", "service": "cart", "version": "v5.2.1", "at": f"{DAY}T13:12:40Z",
         "author": "li.wei", "summary": "cache TTL from 300s to 600s"},
        {"id": "dep-8801", "service": "inventory", "version": "v3.9.0", "at": f"{DAY}T13:41:05Z",
         "author": "sam.o", "summary": "add warehouse_id to stock lookups"},
        {"id": "dep-8812", "service": "payments-gateway", "version": "v2.14.0",
         "at": f"{DAY}T14:02:11Z", "author": "dana.r",
         "summary": "move DB settings to config service; upgrade pg driver to 42.7"},
        {"id": "dep-8815", "service": "payments-gateway", "version": "v2.13.4",
         "at": f"{DAY}T14:33:02Z", "author": "auto-rollback",
         "summary": "automatic rollback: error budget burn rate above 14x"},
    ]

    def fetch_logs(service: str, page: int) -> str:
        if service not in logs:
            raise ValueError(f"unknown service {service!r}; services: {', '.join(logs)}")
        if not 1 <= page <= pages[service]:
            raise ValueError(f"page {page} out of range: {service} has {pages[service]} pages "
                             f"of {PAGE_LINES} lines")
        chunk = logs[service][(page - 1) * PAGE_LINES: page * PAGE_LINES]
        return "\n".join([f"== {service} logs {DAY} 13:50-14:40 UTC, page {page} of "
                          f"{pages[service]} ==", *chunk])

    def search_logs(service: str, query: str) -> list[str]:
        if service not in logs:
            raise ValueError(f"unknown service {service!r}; services: {', '.join(logs)}")
        return [line for line in logs[service] if query in line]

    def get_deploys(since: str) -> list[dict[str, Any]]:
        return [d for d in deploys if d["at"] >= since]

    def get_metrics(service: str, metric: str) -> list[dict[str, Any]]:
        rnd = random.Random(f"{service}/{metric}")
        known = {"error_rate", "p99_ms", "pool_in_use"}
        if metric not in known:
            raise ValueError(f"unknown metric {metric!r}; metrics: {', '.join(sorted(known))}")
        out = []
        for minute in range(13 * 60 + 50, 14 * 60 + 41):
            broken = (14 * 60 + 3 <= minute <= 14 * 60 + 34 if service == "payments-gateway"
                      else 14 * 60 + 4 <= minute <= 14 * 60 + 35)
            if metric == "error_rate":
                value = rnd.uniform(0.31, 0.58) if broken else rnd.uniform(0.001, 0.006)
            elif metric == "p99_ms":
                value = rnd.uniform(29000, 30100) if broken else rnd.uniform(180, 420)
            else:
                value = 5.0 if broken and service == "payments-gateway" else rnd.uniform(8, 31)
            out.append({"minute": f"{minute // 60:02d}:{minute % 60:02d}",
                        "value": round(value, 4)})
        return out

    def get_config_diff(deploy_id: str) -> str:
        if deploy_id != "dep-8812":
            return f"deploy {deploy_id}: no configuration changes"
        return "\n".join([
            "deploy dep-8812 payments-gateway v2.13.4 -> v2.14.0 (author dana.r)",
            "--- config/payments-gateway/v2.13.4.yaml",
            "+++ config-service/payments-gateway/production",
            "@@ database @@",
            "   host: pg-payments-primary.internal",
            "   port: 5432",
            "-  pool:",
            "-    max_connections: 50",
            "-    min_idle: 10",
            "-    timeout_ms: 30000",
            "+  pool:",
            "+    max_connections: ${DB_POOL_MAX:-5}",
            "+    min_idle: ${DB_POOL_MIN_IDLE:-1}",
            "+    timeout_ms: 30000",
            "@@ driver @@",
            "-  postgresql: 42.6.0",
            "+  postgresql: 42.7.2",
            "@@ feature_flags @@",
            "   three_ds_v2: true",
            "+  async_capture: false",
            "note: DB_POOL_MAX and DB_POOL_MIN_IDLE are not set in the production environment",
        ])

    def create_ticket(ticket: dict[str, Any]) -> dict[str, Any]:
        missing = [k for k in ("title", "service", "severity", "body") if k not in ticket]
        if missing:
            raise ValueError(f"ticket is missing {', '.join(missing)}; required: title, "
                             f"service, severity (sev1..sev4), body")
        if ticket["severity"] not in ("sev1", "sev2", "sev3", "sev4"):
            raise ValueError(f"severity must be one of sev1, sev2, sev3, sev4, got "
                             f"{ticket['severity']!r}")
        created = {"id": f"OPS-{4100 + len(tickets)}", "url":
                   f"https://ops.example.com/tickets/OPS-{4100 + len(tickets)}",
                   "status": "open"}
        tickets.append({**ticket, **created})
        return created

    def comment_ticket(ticket_id: str, text: str) -> None:
        if not any(t["id"] == ticket_id for t in tickets):
            raise ValueError(f"no ticket {ticket_id}")

    def page_oncall(team: str, message: str) -> None:
        if team not in ("payments", "checkout", "platform", "identity"):
            raise ValueError(f"no on-call rotation for team {team!r}")

    def post_status(message: str) -> None:
        return None

    return {
        "fetch-logs": Tool("fetch-logs", {"service": "string", "page": "integer"}, "string",
                           "One page (60 lines) of a service's logs, 13:50-14:40 UTC; the "
                           "first line says which page of how many", fetch_logs),
        "search-logs": Tool("search-logs", {"service": "string", "query": "string"}, "list",
                            "Every log line of a service containing query", search_logs),
        "get-deploys": Tool("get-deploys", {"since": "string"}, "list",
                            "Deploys since an ISO timestamp", get_deploys),
        "get-metrics": Tool("get-metrics", {"service": "string", "metric": "string"}, "list",
                            "Per-minute values of error_rate, p99_ms or pool_in_use, "
                            "13:50-14:40", get_metrics),
        "get-config-diff": Tool("get-config-diff", {"deploy_id": "string"}, "string",
                                "The configuration diff a deploy shipped", get_config_diff),
        "create-ticket": Tool("create-ticket", {"ticket": "map"}, "map",
                              "Open an ops ticket {:title :service :severity :body}",
                              create_ticket),
        "comment-ticket": Tool("comment-ticket", {"id": "string", "text": "string"}, "nil",
                               "Add a comment to a ticket", comment_ticket),
        "page-oncall": Tool("page-oncall", {"team": "string", "message": "string"}, "nil",
                            "Page a team's on-call engineer", page_oncall),
        "post-status": Tool("post-status", {"message": "string"}, "nil",
                            "Post an update on the public status page", post_status),
    }


def incident_triage() -> LongRun:
    """The scripted run."""
    run = LongRun(
        name="incident-triage",
        mission=("Incident {{incident.id}}: {{incident.summary}} Find the root cause in the "
                 "service logs, open one ticket per affected service with the evidence, page "
                 "the on-call team that owns the root cause, post a status update, and "
                 "return {:root-cause :tickets :timeline}."),
        data={
            "incident": {"id": "INC-2291", "opened": f"{DAY}T14:09:30Z",
                         "summary": "checkout error rate above 30% since about 14:04 UTC."},
            "services": [
                {"name": "checkout-api", "team": "checkout", "depends_on": ["payments-gateway",
                                                                            "cart", "auth"]},
                {"name": "payments-gateway", "team": "payments", "depends_on": []},
                {"name": "inventory", "team": "platform", "depends_on": []},
                {"name": "auth", "team": "identity", "depends_on": []},
                {"name": "cart", "team": "checkout", "depends_on": ["inventory"]},
            ],
        },
        tools=_tools(),
        max_turns=40,
    )
    s = run.say
    s("First the incident, the services and what was deployed around the start.", """
(println "incident:" data/incident)
(doseq [svc data/services]
  (println (:name svc) "team" (:team svc) "depends on" (:depends_on svc)))
(def deploys "Deploys since 13:00 UTC on the incident day"
  (tool/get-deploys "2025-03-11T13:00:00Z"))
(doseq [d deploys]
  (println (:id d) (:at d) (:service d) (:version d) "by" (:author d) "-" (:summary d)))
""")
    s("The payments-gateway deploy at 14:02 is suspicious. I start with the logs of "
      "checkout-api, the service that is failing.", """
(defn parse-line "Splits a log line into timestamp, level, service and message" [line]
  (let [[ts level service & more] (split line " ")]
    {:ts ts :level level :service service :msg (join " " more)}))
(defn page-entries "The parsed lines of a log page (its first line is a header)" [text]
  (map parse-line (rest (split-lines text))))
(def page "The log page being read" (tool/fetch-logs "checkout-api" 1))
(println (first (split-lines page)))
(let [entries (page-entries page)]
  (println "levels:" (frequencies (map :level entries)))
  (doseq [e (filter #(not= "INFO" (:level %)) entries)]
    (println (:ts e) (:level e) (:msg e))))
""")
    s("Nothing but INFO before 14:00. A page summary will keep this short; page 2.", """
(defn summarize-page "Levels, first error and error kinds of parsed entries" [entries]
  (let [errors (filter #(= "ERROR" (:level %)) entries)]
    {:levels (frequencies (map :level entries))
     :from (:ts (first entries)) :to (:ts (last entries))
     :first-error (:ts (first errors))
     :kinds (frequencies (map #(first (split (:msg %) " req=")) errors))}))
(def page (tool/fetch-logs "checkout-api" 2))
(println (summarise-page (page-entries page)))
""", fails="undefined_symbol")
    s("Typo in the function name; the page is already in memory.", """
(def seen "Summaries of the log pages read, by \\"service/page\\"" {})
(def seen (assoc seen "checkout-api/2" (summarize-page (page-entries page))))
(println (get seen "checkout-api/2"))
(doseq [e (take 25 (filter #(= "ERROR" (:level %)) (page-entries page)))]
  (println (:ts e) (:msg e)))
""")
    s("The errors start at 14:04 and are all upstream timeouts to payments-gateway. "
      "Page 3 of checkout-api.", """
(def page (tool/fetch-logs "checkout-api" 3))
(let [entries (page-entries page)]
  (def seen (assoc seen "checkout-api/3" (summarize-page entries)))
  (println (first (split-lines page)))
  (println (get seen "checkout-api/3"))
  (println "errors per minute:"
    (frequencies (map #(subs (:ts %) 11 16) (filter #(= "ERROR" (:level %)) entries)))))
""")
    s("Page 4, and the error timeline per minute.", """
(def page (tool/fetch-logs "checkout-api" 4))
(def seen (assoc seen "checkout-api/4" (summarize-page (page-entries page))))
(println (get seen "checkout-api/4"))
(doseq [[minute n] (sort (frequencies (map #(subs (:ts %) 11 16)
                                           (filter #(= "ERROR" (:level %)) (page-entries page)))))]
  (println minute (join "" (repeat n "#")) n))
""")
    s("The errors stop at 14:35. Let me read the last page.", """
(def page (tool/fetch-logs "checkout-api" 6))
(println (summarize-page (page-entries page)))
""", fails="tool_error")
    s("checkout-api has only 5 pages; page 5 is the last one.", """
(def page (tool/fetch-logs "checkout-api" 5))
(def seen (assoc seen "checkout-api/5" (summarize-page (page-entries page))))
(println (first (split-lines page)))
(println (get seen "checkout-api/5"))
(doseq [e (filter #(not= "INFO" (:level %)) (page-entries page))]
  (println (:ts e) (:level e) (:msg e)))
""")
    s("checkout-api recovered at 14:35. Now payments-gateway, its upstream, from page 1.",
      """
(def page (tool/fetch-logs "payments-gateway" 1))
(def seen (assoc seen "payments-gateway/1" (summarize-page (page-entries page))))
(println (first (split-lines page)))
(println (get seen "payments-gateway/1"))
(doseq [e (filter #(or (not= "INFO" (:level %)) (starts-with? (:msg %) "starting"))
                  (page-entries page))]
  (println (:ts e) (:level e) (:msg e)))
""")
    s("I will read several more pages; a helper that fetches, parses and summarizes one.",
      """
(defn read-page "Fetches page n of a service's logs; returns {:header :text :summary}"
  [service n]
  (let [text (tool/fetch-logs service n)]
    {:header (first (split-lines text)) :text text :summary (summarize-page (page-entries text))}))
(def current (read-page "payments-gateway"))
(println (:summary current))
""", fails="arity_error")
    s("Forgot the page number.", """
(def current "The page being read: {:header :text :summary}" (read-page "payments-gateway" 2))
(def seen (assoc seen "payments-gateway/2" (:summary current)))
(println (:header current))
(println (:summary current))
(doseq [e (filter #(starts-with? (:msg %) "starting") (page-entries (:text current)))]
  (println "DEPLOY" (:ts e) (:msg e)))
(doseq [e (take 30 (filter #(not= "INFO" (:level %)) (page-entries (:text current))))]
  (println (:ts e) (:level e) (:msg e)))
""")
    s("v2.14.0 started at 14:02 with pool.max_connections=5, and the pool is exhausted right "
      "after. Pages 3 and 4.", """
(def current (read-page "payments-gateway" 3))
(def seen (assoc seen "payments-gateway/3" (:summary current)))
(println (:header current))
(println (:summary current))
(def waiting "Waiting counts from pool-exhausted warnings"
  (keep #(when (includes? (:msg %) "pool exhausted")
           (parse-long (first (split (second (split (:msg %) "in use, ")) " "))))
        (page-entries (:text current))))
(println "pool waiters: max" (apply max waiting) "mean" (/ (apply + waiting) (count waiting)))
""")
    s("Page 4, with the same statistics.", """
(def current (read-page "payments-gateway" 4))
(def seen (assoc seen "payments-gateway/4" (:summary current)))
(println (:header current))
(println (:summary current))
(doseq [e (take 40 (page-entries (:text current)))]
  (println (subs (:ts e) 11 19) (:level e) (subs (:msg e) 0 (min 90 (count (:msg e))))))
""")
    s("Page 5: does it recover, and when?", """
(def current (read-page "payments-gateway" 5))
(def seen (assoc seen "payments-gateway/5" (:summary current)))
(println (:header current))
(println (:summary current))
(doseq [e (filter #(starts-with? (:msg %) "starting") (page-entries (:text current)))]
  (println "DEPLOY" (:ts e) (:msg e)))
(println "last error:" (:ts (last (filter #(= "ERROR" (:level %)) (page-entries (:text current))))))
""")
    s("Restarted on v2.13.4 with 50 connections at 14:33. Now the metrics, minute by minute.",
      """
(def checkout-errors "checkout-api error_rate per minute"
  (tool/get-metrics "checkout-api" "error_rate"))
(doseq [m checkout-errors]
  (println (:minute m) (format "%6.2f%%" (* 100 (:value m)))))
""")
    s("And the gateway's pool usage and p99 latency.", """
(def pool "payments-gateway pool_in_use per minute"
  (tool/get-metrics "payments-gateway" "pool_in_use"))
(def p99 "payments-gateway p99_ms per minute" (tool/get-metrics "payments-gateway" "p99_ms"))
(doseq [[a b] (map vector pool p99)]
  (println (:minute a) "pool" (format "%5.1f" (:value a)) "p99" (format "%8.0f ms" (:value b))))
""")
    s("Pool pinned at 5 while p99 sits at the 30 s timeout. What did dep-8812 change?", """
(def diff "Config diff of deploy dep-8812" (tool/get-config-diff "dep-8812"))
(println diff)
""")
    s("The pool default fell to 5 because DB_POOL_MAX is not set in production. Before I "
      "conclude, the red herrings: inventory logs its slow queries.", """
(def current (read-page "inventory" 1))
(println (:header current))
(println (:summary current))
(defn took-ms "The took_ms= value of a message, or nil" [msg]
  (when (includes? msg "took_ms=")
    (parse-long (first (split (second (split msg "took_ms=")) " ")))))
(def slow-before "Slow-query times before 14:02"
  (keep #(when (< (compare (:ts %) "2025-03-11T14:02") 0) (took-ms (:msg %))) (page-entries (:text current))))
(println "slow queries before the deploy:" (count slow-before) "mean ms"
  (/ (apply + slow-before) (count slow-before)))
""")
    s("Page 2 of inventory, after 14:02.", """
(def current (read-page "inventory" 2))
(println (:header current))
(def slow-after "Slow-query times after 14:02"
  (keep #(took-ms (:msg %)) (page-entries (:text current))))
(println "slow queries after:" (count slow-after) "mean ms" (/ (apply + slow-after) (count slow-after)))
(doseq [e (filter #(= "WARN" (:level %)) (page-entries (:text current)))]
  (println (:ts e) (:msg e)))
""")
    s("Inventory was just as slow before the incident: unrelated. auth's token errors next.",
      """
(def auth-errors "auth lines with invalid_grant" (tool/search-logs "auth" "invalid_grant"))
(println (count auth-errors) "invalid_grant errors")
(doseq [[bucket n] (sort (frequencies (map #(subs % 11 15) auth-errors)))]
  (println bucket "0" n))
(doseq [line auth-errors] (println line))
""")
    s("Steady every ten minutes, before and during: unrelated too. cart, the last dependency.",
      """
(def current (read-page "cart" 1))
(println (:header current))
(println (:summary current))
(doseq [e (filter #(= "WARN" (:level %)) (page-entries (:text current)))]
  (println (:ts e) (:msg e)))
""")
    s("cart is healthy. How slow were checkout's failing requests? Mean latency of the "
      "errors on page 3.", """
(def page (tool/fetch-logs "checkout-api" 3))
(println "mean error latency:"
  (/ (apply + (map :latency (filter #(= "ERROR" (:level %)) (page-entries page)))) 1000.0))
""", fails="type_error")
    s("Entries have no :latency yet. I redefine parse-line to extract latency_ms and the "
      "request id.", """
(defn field-value "The value of key=value in a message, or nil" [msg k]
  (when (includes? msg (str k "="))
    (first (split (second (split msg (str k "="))) " "))))
(defn parse-line "Splits a log line into timestamp, level, service, message, latency and request id"
  [line]
  (let [[ts level service & more] (split line " ")
        msg (join " " more)]
    {:ts ts :level level :service service :msg msg
     :req (field-value msg "req") :latency (parse-long (or (field-value msg "latency_ms") ""))}))
(let [errors (filter #(= "ERROR" (:level %)) (page-entries page))]
  (def error-latency "Mean latency in seconds of checkout's errors on page 3"
    (/ (apply + (keep :latency errors)) (* 1000.0 (count errors))))
  (println "mean error latency (s):" error-latency)
  (doseq [e (take 20 errors)]
    (println (:ts e) (:req e) (:latency e))))
""")
    s("30 s, the gateway's pool timeout exactly. The timeline, from what I read.", """
(def timeline "Key moments of the incident"
  [["14:02:11" "dep-8812 payments-gateway v2.14.0 deployed, DB pool max 5 (was 50)"]
   ["14:03" "payments-gateway: connection pool exhausted, authorize times out at 30 s"]
   ["14:04" "checkout-api: 502 upstream timeouts, error rate above 30%"]
   ["14:33:02" "dep-8815 automatic rollback to v2.13.4, pool max 50"]
   ["14:35" "checkout-api error rate back under 1%"]])
(doseq [[t what] timeline] (println t "-" what))
(println "pages read:" (sort (keys seen)))
""")
    s("I open the ticket for the root cause first.", """
(def evidence "Evidence for the tickets"
  (str "payments-gateway v2.14.0 (dep-8812, 14:02:11) moved DB settings to the config service; "
       "DB_POOL_MAX is unset in production so pool.max_connections fell from 50 to 5. "
       "From 14:03 the pool is exhausted (5/5 in use, up to 90 waiting) and authorize calls time "
       "out after 30000 ms; checkout-api returns 502 upstream timeouts from 14:04. "
       "The automatic rollback dep-8815 at 14:33:02 restored the pool; errors stop at 14:35."))
(def gateway-ticket "The root-cause ticket"
  (tool/create-ticket {:title "payments-gateway DB pool fell to 5 connections after v2.14.0"
                       :service "payments-gateway" :body evidence}))
""", fails="tool_error")
    s("The ticket needs a severity. Checkout was down for 30 minutes: sev1.", """
(def gateway-ticket "The root-cause ticket"
  (tool/create-ticket {:title "payments-gateway DB pool fell to 5 connections after v2.14.0"
                       :service "payments-gateway" :severity "sev1" :body evidence}))
(println gateway-ticket)
""")
    s("Now checkout-api's ticket, linked to the root cause.", """
(def checkout-ticket "The ticket for the affected checkout-api"
  (tool/create-ticket
    {:title "checkout-api 502s during INC-2291 (upstream payments-gateway timeouts)"
     :service "checkout-api" :severity "sev2"
     :body (str "Caused by " (:id gateway-ticket) ". checkout-api waited the full 30 s on every "
                "failing authorize call (mean error latency " error-latency " s). Follow-up: a "
                "client timeout below 30 s and a circuit breaker on payments-gateway.")}))
(println checkout-ticket)
""")
    s("Page the payments on-call: the rollback fixed it, but v2.14.0 must not be redeployed "
      "as is.", """
(tool/page-oncall "payments"
  (str "INC-2291: root cause is dep-8812 (payments-gateway v2.14.0): DB_POOL_MAX unset, pool 5. "
       "Auto-rollback at 14:33 fixed it. Do not redeploy v2.14.0 before setting DB_POOL_MAX. "
       "See " (:id gateway-ticket) "."))
(println "paged payments about" (:id gateway-ticket))
""")
    s("The status page update.", """
(tool/post-status
  (str "Resolved: between 14:04 and 14:35 UTC about a third of checkout attempts failed. "
       "A configuration change in our payment service has been rolled back. No payments were "
       "charged twice. We are sorry for the trouble."))
(println "status posted")
""")
    s("Did anything deploy after the rollback? Check before the tickets say it is stable.",
      """
(def later-deploys "Deploys since the rollback" (tool/get-deploys "2025-03-11T14:33:00Z"))
(doseq [d later-deploys] (println (:id d) (:at d) (:service d) (:version d) (:summary d)))
(def gateway-errors "payments-gateway error_rate per minute"
  (tool/get-metrics "payments-gateway" "error_rate"))
(doseq [m (take-last 10 gateway-errors)]
  (println (:minute m) (format "%.3f%%" (* 100 (:value m)))))
""")
    s("Stable since 14:35. I add the metrics to both tickets.", """
(def peak "Peak checkout error rate" (apply max-key :value checkout-errors))
(doseq [t [gateway-ticket checkout-ticket]]
  (tool/comment-ticket (:id t)
    (str "Metrics: checkout error rate peaked at " (format "%.1f%%" (* 100 (:value peak)))
         " at " (:minute peak) "; payments-gateway pool_in_use pinned at 5 from 14:03 to 14:34;"
         " p99 at the 30 s timeout. Back to normal from 14:35 after dep-8815.")))
(println "commented on" (map :id [gateway-ticket checkout-ticket]))
""")
    s("Everything is filed. The answer.", """
(return {:root-cause (str "dep-8812: payments-gateway v2.14.0 shrank the DB pool from 50 to 5 "
                          "(DB_POOL_MAX unset), so authorize calls timed out after 30 s")
         :tickets (map :id [gateway-ticket checkout-ticket])
         :timeline (map first timeline)})
""")
    return run
