"""Plan evaluators: recompute feasibility and the objective of a plan from the final state.

These functions are the body of every solver task's `verifier_code`: their source is embedded in
the check code and run in the sandbox (`Sandbox.run_check`), never in-process on agent output. The
instance data are read from `initial_state` (the agent cannot move the goalposts by editing a cost)
and only the decision fields are read from `final_state`. They use only what the sandbox allows:
plain dicts, lists, arithmetic, no imports.

Each returns {"feasible": bool, "objective": float, "problems": [str, ...]}.
"""

from __future__ import annotations

from typing import Any


def data_problems(initial_state: Any, final_state: Any, decision_tables: Any) -> list[str]:
    """Anything the agent changed besides the status of decision records (data must stay as given)."""
    problems = []
    for table, records in initial_state.items():
        if not isinstance(records, dict):
            continue
        after = final_state.get(table)
        if not isinstance(after, dict):
            problems.append("table " + table + " is missing")
            continue
        for key in after:
            if key not in records:
                problems.append(table + " gained a record " + str(key))
        for key, record in records.items():
            now = after.get(key)
            if not isinstance(now, dict):
                problems.append(table + " lost record " + str(key))
                continue
            for field, value in record.items():
                if table in decision_tables and field == "status":
                    continue
                if now.get(field) != value:
                    problems.append(table + "[" + str(key) + "]." + field + " was changed")
    return problems


def chosen(final_state: Any, table: str, on_value: str) -> list[Any]:
    records = final_state.get(table) or {}
    return [r for k, r in sorted(records.items()) if r.get("status") == on_value]


def evaluate_knapsack(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["proposals"])
    program = list(initial_state["programs"].values())[0]
    picked = chosen(final_state, "proposals", "funded")
    data = initial_state["proposals"]
    cost = sum(data[r["proposal_id"]]["cost"] for r in picked)
    if cost > program["budget"] + 1e-6:
        problems.append(
            "funded cost " + str(round(cost, 2)) + " exceeds the budget " + str(program["budget"])
        )
    per_theme: dict[str, int] = {}
    for r in picked:
        theme = data[r["proposal_id"]]["theme"]
        per_theme[theme] = per_theme.get(theme, 0) + 1
    for theme, count in sorted(per_theme.items()):
        if count > program["max_per_theme"]:
            problems.append(str(count) + " proposals funded in theme " + theme)
    impact = sum(data[r["proposal_id"]]["impact"] for r in picked)
    return {"feasible": not problems, "objective": float(impact), "problems": problems}


def evaluate_assignment(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["quotes"])
    quotes = initial_state["quotes"]
    accepted = chosen(final_state, "quotes", "accepted")
    per_delivery: dict[str, int] = {}
    per_driver: dict[str, int] = {}
    windows: dict[str, list[str]] = {}
    for r in accepted:
        q = quotes[r["quote_id"]]
        per_delivery[q["delivery_id"]] = per_delivery.get(q["delivery_id"], 0) + 1
        per_driver[q["driver_id"]] = per_driver.get(q["driver_id"], 0) + 1
        window = initial_state["deliveries"][q["delivery_id"]]["window"]
        windows.setdefault(q["driver_id"], []).append(window)
    for key in sorted(initial_state["deliveries"]):
        if per_delivery.get(key, 0) != 1:
            problems.append("delivery " + key + " has " + str(per_delivery.get(key, 0)) + " accepted quotes")
    for key, count in sorted(per_driver.items()):
        if count > initial_state["drivers"][key]["max_jobs"]:
            problems.append("driver " + key + " takes " + str(count) + " deliveries")
        if len(set(windows[key])) != len(windows[key]):
            problems.append("driver " + key + " has two deliveries in one window")
    cost = sum(quotes[r["quote_id"]]["cost"] for r in accepted)
    return {"feasible": not problems, "objective": round(float(cost), 2), "problems": problems}


def evaluate_shifts(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["availabilities"])
    slots = initial_state["availabilities"]
    shifts = initial_state["shifts"]
    employees = initial_state["employees"]
    taken = chosen(final_state, "availabilities", "scheduled")
    per_shift: dict[str, int] = {}
    per_employee: dict[str, list[str]] = {}
    cost = 0.0
    for r in taken:
        a = slots[r["availability_id"]]
        s = shifts[a["shift_id"]]
        per_shift[a["shift_id"]] = per_shift.get(a["shift_id"], 0) + 1
        per_employee.setdefault(a["employee_id"], []).append(a["shift_id"])
        cost += employees[a["employee_id"]]["hourly_rate"] * (s["end_hour"] - s["start_hour"])
    for key in sorted(shifts):
        if per_shift.get(key, 0) != shifts[key]["headcount"]:
            problems.append("shift " + key + " is staffed by " + str(per_shift.get(key, 0)))
    for emp, mine in sorted(per_employee.items()):
        if len(mine) > employees[emp]["max_shifts"]:
            problems.append("employee " + emp + " works " + str(len(mine)) + " shifts")
        for i in range(len(mine)):
            for j in range(i + 1, len(mine)):
                a, b = shifts[mine[i]], shifts[mine[j]]
                if (
                    a["day"] == b["day"]
                    and a["start_hour"] < b["end_hour"]
                    and b["start_hour"] < a["end_hour"]
                ):
                    problems.append(
                        "employee " + emp + " has overlapping shifts " + mine[i] + " and " + mine[j]
                    )
    return {"feasible": not problems, "objective": round(cost, 2), "problems": problems}


def evaluate_facility(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["suppliers", "lanes"])
    lanes = initial_state["lanes"]
    stores = initial_state["stores"]
    suppliers = initial_state["suppliers"]
    contracted = [r["supplier_id"] for r in chosen(final_state, "suppliers", "contracted")]
    active = chosen(final_state, "lanes", "active")
    per_store: dict[str, int] = {}
    load: dict[str, int] = {}
    cost = sum(suppliers[s]["fixed_fee"] for s in contracted)
    for r in active:
        lane = lanes[r["lane_id"]]
        per_store[lane["store_id"]] = per_store.get(lane["store_id"], 0) + 1
        demand = stores[lane["store_id"]]["demand"]
        load[lane["supplier_id"]] = load.get(lane["supplier_id"], 0) + demand
        cost += lane["unit_cost"] * demand
        if lane["supplier_id"] not in contracted:
            problems.append("lane " + r["lane_id"] + " ships from a supplier without a contract")
    for key in sorted(stores):
        if per_store.get(key, 0) != 1:
            problems.append("store " + key + " is served by " + str(per_store.get(key, 0)) + " lanes")
    for key, units in sorted(load.items()):
        if units > suppliers[key]["capacity"]:
            problems.append("supplier " + key + " ships " + str(units) + " units over its capacity")
    return {"feasible": not problems, "objective": round(cost, 2), "problems": problems}


def evaluate_procurement(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["offers"])
    offers = initial_state["offers"]
    ordered = [r["offer_id"] for r in chosen(final_state, "offers", "ordered")]
    policy = list(initial_state["policies"].values())[0]
    got: dict[str, int] = {}
    for line in initial_state["offer_lines"].values():
        if line["offer_id"] in ordered:
            got[line["requirement_id"]] = got.get(line["requirement_id"], 0) + line["units"]
    for key, req in sorted(initial_state["requirements"].items()):
        if got.get(key, 0) < req["minimum"]:
            problems.append(
                "requirement " + key + " gets " + str(got.get(key, 0)) + " of " + str(req["minimum"])
            )
    per_vendor: dict[str, int] = {}
    for key in ordered:
        vendor = offers[key]["vendor"]
        per_vendor[vendor] = per_vendor.get(vendor, 0) + 1
    for vendor, count in sorted(per_vendor.items()):
        if count > policy["max_offers_per_vendor"]:
            problems.append(str(count) + " offers ordered from " + vendor)
    cost = sum(offers[k]["price"] for k in ordered)
    return {"feasible": not problems, "objective": round(float(cost), 2), "problems": problems}


def evaluate_route(initial_state: Any, final_state: Any) -> dict[str, Any]:
    problems = data_problems(initial_state, final_state, ["legs"])
    legs = initial_state["legs"]
    stops = sorted(initial_state["stops"])
    planned = [legs[r["leg_id"]] for r in chosen(final_state, "legs", "planned")]
    nxt: dict[str, list[str]] = {}
    incoming: dict[str, int] = {}
    for leg in planned:
        nxt.setdefault(leg["from_stop"], []).append(leg["to_stop"])
        incoming[leg["to_stop"]] = incoming.get(leg["to_stop"], 0) + 1
    for stop in stops:
        if len(nxt.get(stop, [])) != 1 or incoming.get(stop, 0) != 1:
            problems.append("stop " + stop + " is not left and entered exactly once")
    if not problems:
        depot = [k for k in stops if initial_state["stops"][k]["is_depot"]][0]
        seen = [depot]
        here = nxt[depot][0]
        while here != depot and len(seen) <= len(stops):
            seen.append(here)
            here = nxt[here][0]
        if len(seen) != len(stops):
            problems.append(
                "the planned legs form more than one loop; the tour skips "
                + str(len(stops) - len(seen))
                + " stops"
            )
    minutes = sum(leg["minutes"] for leg in planned)
    return {"feasible": not problems, "objective": float(minutes), "problems": problems}
