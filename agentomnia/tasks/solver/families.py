"""The six problem families of solver-anchored tasks, each with its input contract and blueprint.

budgeted selection (knapsack), assignment, shift scheduling with conflicts, supplier/facility
selection, multi-constraint procurement mix and small-route planning. Each draws instances as
environment states, states them as a MILP over binary decisions, and offers a greedy baseline so
the size of the comparison space (how much better the optimum is) can be measured.

Each family also states its request in several registers (a plain request, a hurried note, a careful
planner, a forwarded message, ...), filled with facts of the instance. Every wording keeps the same
contract as the rubric and the evaluator grade it: the objective, the explicit constraints (implicit
ones stay unstated), what to change in the system and what to report back;
tests/tasks/solver/test_solver_queries.py checks every wording against that contract.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from agentomnia.envs.semantic import pools
from agentomnia.tasks.solver import evaluators
from agentomnia.tasks.solver.contract import Blueprint, ContractField, InputContract, Trace
from agentomnia.tasks.solver.family import Decision, Family, Plan, State, attr, count_word, entity, listing
from agentomnia.tasks.solver.milp import Milp, Row

CITIES = ["Lisbon", "Austin", "Osaka", "Lyon", "Denver", "Porto", "Seoul", "Leeds", "Turin", "Calgary"]
STREETS = ["Harbor St", "Cedar St", "Maple Ave", "Oak Lane", "River Rd", "Willow Way", "Elm St", "Church St", "Park Ave", "Mill Rd", "Station Rd", "Hill St", "Lake Dr", "Pine St", "Bridge St", "Orchard Lane", "Market St", "Grove Rd", "Chestnut St", "Ferry Rd", "Spring St", "Walnut Ave", "Quarry Rd", "Meadow Lane"]  # fmt: skip
# Proposal titles by theme: what a funding round in each theme is asked to pay for.
TITLES = {
    "climate": [
        "Coastal flood early-warning sensors",
        "Soil carbon mapping on working farms",
        "Urban heat island tree survey",
        "Methane leak detection from drones",
        "Glacier melt runoff forecasting",
        "Peatland restoration monitoring",
        "Low-carbon cement field trial",
        "Regional drought risk atlas",
    ],
    "health": [
        "Early sepsis alerts in emergency care",
        "Malaria vaccine cold-chain study",
        "Wearable gait monitor for fall risk",
        "Antibiotic stewardship in care homes",
        "Rural telehealth for diabetes follow-up",
        "Childhood asthma and air quality cohort",
        "Point-of-care anaemia screening",
        "Sleep apnoea home testing trial",
    ],
    "materials": [
        "Graphene membranes for water filtration",
        "Recyclable battery electrolytes",
        "Self-healing concrete coatings",
        "Bio-based packaging polymers",
        "Corrosion-resistant offshore alloys",
        "Perovskite solar cell durability",
        "Low-cost hydrogen storage materials",
        "Ceramic filters for arsenic removal",
    ],
    "computing": [
        "Privacy-preserving hospital data sharing",
        "Energy-efficient model training",
        "Open-source flood simulation toolkit",
        "Verified compilers for medical devices",
        "Edge AI for crop disease detection",
        "Quantum error-correction benchmarks",
        "Federated learning for rare diseases",
        "Secure firmware updates for IoT",
    ],
}


def _key(prefix: str, i: int) -> str:
    return f"{prefix}-{i:03d}"


def _namer(rng: random.Random) -> random.Random:
    """A generator for names only, derived from `rng`'s state without drawing from it, so naming
    the people, companies and places of an instance leaves its numbers as they were."""
    return random.Random(",".join(map(str, rng.getstate()[1])))


def _people(rng: random.Random, n: int) -> list[str]:
    """`n` full names with distinct first names (requests call people by their first name)."""
    pool = pools("en_US")
    firsts = rng.sample(pool.first, k=n)
    return [f"{first} {rng.choice(pool.last)}" for first in firsts]


def _bundle_title(items: list[str]) -> str:
    """What a vendor calls an offer of these items: "Laptop and headset bundle", "Monitor pack"."""
    singular = [item[:-1] if item.endswith("s") else item for item in items]
    if len(singular) == 1:
        return f"{singular[0].capitalize()} pack"
    return f"{listing(singular).capitalize()} bundle"


def _companies(rng: random.Random, n: int) -> list[str]:
    """`n` distinct company names that read as one name in a list (no commas or "and")."""
    plain = [c for c in pools("en_US").companies if "," not in c and " and " not in c]
    return rng.sample(plain, k=n)


def _f(*spec: tuple[str, str, str, str]) -> tuple[ContractField, ...]:
    return tuple(ContractField(field=f, meaning=m, scale=s, range=r) for f, m, s, r in spec)


# ---------------------------------------------------------------------------------------------


class Knapsack(Family):
    name = "knapsack"
    title = "Budgeted project selection"
    taxonomy_id = 20158  # Research / Project Manager
    class_name = "GrantPortfolio"
    description = "A research program's funding round: proposals with cost, theme and expected impact, and the program's budget and funding rules."
    sense = "max"
    objective_field = "total_impact"
    evaluator = staticmethod(evaluators.evaluate_knapsack)
    entities = (
        entity("program", "programs", "PRG", "The funding program and its rules.", [
            attr("name", "str"), attr("budget", "money", "total money available this round"),
            attr("max_per_theme", "int", "at most this many proposals may be funded per theme"),
        ]),
        entity("proposal", "proposals", "PRP", "A project proposal seeking funding.", [
            attr("title", "str"), attr("theme", "enum", enum=("climate", "health", "materials", "computing")),
            attr("cost", "money", "requested funding"), attr("impact", "int", "expected impact score"),
            attr("status", "enum", enum=("proposed", "funded"), default="proposed"),
        ]),
    )  # fmt: skip
    decisions = (Decision("proposal", "funded", "proposed", "fund_proposal", "unfund_proposal",
                          "Mark a proposal as funded in this round.", "Withdraw funding from a proposal (back to proposed)."),)  # fmt: skip
    contract = InputContract(
        family=name, summary="choose a subset of proposals maximizing total impact under a budget and a per-theme cap",
        fields=_f(("proposals.cost", "money a proposal needs if funded", "currency units", "20000-120000"),
                  ("proposals.impact", "expected benefit of funding it", "score", "10-95"),
                  ("proposals.theme", "research theme, for the per-theme cap", "category", "4 themes"),
                  ("programs.budget", "money available", "currency units", "about 40% of the total asked"),
                  ("programs.max_per_theme", "funding cap per theme", "count", "2-3")),
        feasibility=("funding nothing is always feasible", "degenerate when everything fits in the budget and caps"),
        size="one program, 8-12 proposals",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="max", decisions={"proposals": "funded"},
        objective=Trace(id="impact", role="objective", text="maximize the total impact of funded proposals", fields=("proposals.impact",)),
        constraints=(
            Trace(id="budget", role="explicit", text="funded costs stay within the budget", fields=("proposals.cost", "programs.budget")),
            Trace(id="theme_cap", role="implicit", text="no more funded proposals per theme than the program allows", fields=("proposals.theme", "programs.max_per_theme")),
            Trace(id="data_fixed", role="implicit", text="costs, impacts and rules are not edited", fields=("proposals.*", "programs.*")),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        n = rng.randint(8, 12)
        themes = self.entities[1].attribute("theme").enum  # type: ignore[union-attr]
        titles = {theme: _namer(rng).sample(TITLES[theme], k=len(TITLES[theme])) for theme in themes}
        proposals = {}
        for i in range(1, n + 1):
            cost = rng.choice((40000, 60000, 80000)) if ties else rng.randrange(20000, 120001, 1000)
            impact = rng.choice((30, 45, 60)) if ties else rng.randint(10, 95)
            k = _key("PRP", i)
            theme = rng.choice(themes)
            title = (
                titles[theme].pop() if titles[theme] else f"{TITLES[theme][i % len(TITLES[theme])]} (phase 2)"
            )
            proposals[k] = {"proposal_id": k, "title": title, "theme": theme,
                            "cost": float(cost), "impact": impact, "status": "proposed"}  # fmt: skip
        budget = float(round(0.4 * sum(p["cost"] for p in proposals.values()), -3))
        program = {"program_id": "PRG-001", "name": rng.choice(["Horizon", "Frontier", "Catalyst"]) + " Fund",
                   "budget": budget, "max_per_theme": rng.choice((2, 3))}  # fmt: skip
        return {"programs": {"PRG-001": program}, "proposals": proposals}

    def model(self, state: Mapping[str, Any]) -> Milp:
        keys = sorted(state["proposals"])
        recs = [state["proposals"][k] for k in keys]
        program = next(iter(state["programs"].values()))
        rows = [Row(name="budget", coefs={i: r["cost"] for i, r in enumerate(recs)}, upper=program["budget"])]
        for theme in sorted({r["theme"] for r in recs}):
            idx = {i: 1.0 for i, r in enumerate(recs) if r["theme"] == theme}
            rows.append(Row(name=f"theme_cap:{theme}", coefs=idx, upper=program["max_per_theme"]))
        return Milp(sense="max", objective=[float(r["impact"]) for r in recs], rows=rows,
                    binaries=[("proposals", k) for k in keys])  # fmt: skip

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        program = next(iter(state["programs"].values()))
        spent, per_theme, picked = 0.0, dict[str, int](), []
        for r in sorted(
            state["proposals"].values(), key=lambda r: (-r["impact"] / r["cost"], r["proposal_id"])
        ):
            if (
                spent + r["cost"] <= program["budget"]
                and per_theme.get(r["theme"], 0) < program["max_per_theme"]
            ):
                spent += r["cost"]
                per_theme[r["theme"]] = per_theme.get(r["theme"], 0) + 1
                picked.append(r["proposal_id"])
        return {"proposals": sorted(picked)}

    phrasings = (
        # 1. the program head, plainly
        "[I run the {program} and need the final funding decisions for this round."
        "|I'm responsible for the {program}, and this round's funding decisions have to be final today."
        "|As head of the {program}, I need this round's funding decisions settled.] "
        "[Someone started a draft selection in the system, but I don't trust it."
        "|There is already a draft selection in the system, but I don't trust it."
        "|A colleague began a draft selection in the system; I'm not confident in it.] "
        "[Decide which of the {n} proposals to fund so that we get the highest possible total expected impact without "
        "going over the program's budget, and follow the program's own funding rules."
        "|Out of the {n} proposals, choose the ones to fund that give the highest possible total expected impact, "
        "without going over the program's budget and in line with the program's own funding rules.] "
        "[Record the decisions in the system (only the funding decisions should change)"
        "|Put the decisions into the system, changing only the funding decisions,] "
        "and [tell me|let me know] the total impact of the final selection.",
        # 2. in a hurry before a meeting
        "Quick one[ before the panel meets| before tomorrow's board call|]: "
        "[the {program} round has {n_word} proposals and I need the funded list locked in today."
        "|I need the {program}'s funded list for this round settled today, {n_word} proposals in play.] "
        "[The draft selection someone left in the system isn't to be trusted, so check it properly."
        "|Don't rely on the draft selection that's already in the system; check it properly.] "
        "[Get us as much total expected impact as possible, stay within the budget and stick to the program's "
        "funding rules.|Maximum total expected impact, within the budget, by the program's funding rules.] "
        "[Change nothing in the system except which proposals are funded, and send me"
        "|Only the funding decisions should change in the system; send me] the total impact it reaches.",
        # 3. the committee, formally
        "[On behalf of|Writing for] the {program} committee: "
        "[we have {n} proposals competing for funding this round and we want the selection that maximises total "
        "expected impact.|{n_word} proposals are competing for this round's funding, and the committee wants the "
        "selection with the greatest total expected impact.] "
        "[Two conditions apply: the funded proposals together must not cost more than the program's budget, and the "
        "selection must respect the program's funding rules.|The selection is bound by two conditions: its total cost "
        "may not exceed the program's budget, and it must respect the program's funding rules.] "
        "[A draft selection has been entered in the system; please review it rather than assume it is right."
        "|The system already holds a draft selection, which should be treated as unchecked.] "
        "[Change only which proposals are funded in the system, and report"
        "|Please amend only the funding decisions in the system and report] "
        "the total impact of the selection you settle on.",
        # 4. a request forwarded from the program office
        'Forwarding a request from the {program} office: "'
        "[We need this round's funding decided.|This round's funding decisions are due.] "
        "[Please pick, from the {n} proposals on file, the set with the greatest total expected impact that fits "
        "within the program's budget and follows the program's funding rules.|Of the {n} proposals on file, please "
        "fund the combination with the greatest total expected impact that stays within the program's budget and "
        "follows the program's funding rules.] "
        "[There is a draft selection in the system already, but nobody has checked it."
        '|Somebody entered a draft selection in the system, but nobody has checked it.]" '
        "Could you [take care of it|handle this] in the system, changing only the funding decisions, and "
        "[reply with|send me] the total impact of the final selection?",
        # 5. the question first
        "[What is the highest total expected impact the {program} can achieve this round?"
        "|What is the most total expected impact the {program} can get out of this round?] "
        "[Work it out over the {n} proposals, keep within the program's budget and follow its funding rules."
        "|Consider all {n} proposals, stay inside the program's budget and follow the program's funding rules.] "
        "[The draft selection already in the system is unverified, so make the system show your selection instead,"
        "|The system holds a draft selection nobody has verified; replace it with your selection,] "
        "leaving everything other than the funding decisions alone. "
        "[Please report|Report back with] the total impact [once it's done|at the end].",
        # 6. the limits first
        "[Budget comes first for the {program}: whatever we fund this round must fit within the program's budget, and "
        "the program's own funding rules apply as well.|For the {program}, the hard limits come first: the funded "
        "proposals must fit within the program's budget and follow the program's own funding rules.] "
        "[Within those limits, choose among the {n} proposals to make the total expected impact as large as possible."
        "|Inside those limits, pick from the {n} proposals the set with the largest total expected impact.] "
        "[The funding decisions in the system currently hold an unreviewed draft; set them to your final choice and "
        "touch nothing else.|What is in the system now is an unreviewed draft; make the funding decisions match your "
        "final choice and leave everything else as it is.] "
        "[Tell me|I need to know] the total impact of what ends up funded.",
        # 7. a quick chat message
        "[Hey|Hi], can you finalise the {program} funding round? "
        "[There are {n_word} proposals in the system and a half-finished draft selection I don't trust."
        "|{n} proposals are in the system, plus a half-finished draft selection I don't trust.] "
        "[Aim for the maximum total expected impact, don't exceed the budget, and play by the program's funding rules."
        "|Go for the most total expected impact you can, don't go over the budget, and stick to the program's funding "
        "rules.] "
        "[Only the funding decisions should change in the system.|In the system, please change only the funding "
        "decisions.] "
        "[Let me know|Tell me] the total impact at the end.",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        program = next(iter(state["programs"].values()))
        n = len(state["proposals"])
        return {"program": program["name"], "n": str(n), "n_word": count_word(n)}


class Assignment(Family):
    name = "assignment"
    title = "Driver-to-delivery assignment"
    taxonomy_id = 20098  # Logistics / Transport Dispatcher
    class_name = "DispatchBoard"
    description = "A dispatch board: drivers with job limits, deliveries with time windows, and per-driver price quotes for each delivery."
    sense = "min"
    objective_field = "total_cost"
    evaluator = staticmethod(evaluators.evaluate_assignment)
    entities = (
        entity("driver", "drivers", "DRV", "A driver who can take deliveries.", [
            attr("name", "str"), attr("home_depot", "str"), attr("max_jobs", "int", "deliveries this driver may take today"),
        ]),
        entity("delivery", "deliveries", "DEL", "A delivery that needs exactly one driver.", [
            attr("reference", "str"), attr("window", "enum", "delivery time window", enum=("morning", "afternoon", "evening")),
        ]),
        entity("quote", "quotes", "QUO", "A driver's price for one delivery; accepting it assigns the driver.", [
            attr("driver_id", "ref", ref="driver"), attr("delivery_id", "ref", ref="delivery"), attr("cost", "money"),
            attr("status", "enum", enum=("open", "accepted"), default="open"),
        ]),
    )  # fmt: skip
    decisions = (Decision("quote", "accepted", "open", "accept_quote", "withdraw_quote",
                          "Accept a driver's quote, assigning that driver to the delivery.", "Withdraw an accepted quote (back to open)."),)  # fmt: skip
    contract = InputContract(
        family=name, summary="assign each delivery to one quoting driver at minimum total cost",
        fields=_f(("quotes.cost", "price of a driver doing a delivery", "currency units", "40-220"),
                  ("drivers.max_jobs", "deliveries a driver may take", "count", "1-2"),
                  ("deliveries.window", "time window; a driver does one delivery per window", "category", "3 windows"),
                  ("quotes.driver_id/delivery_id", "which pairs are possible at all", "pairs", "about 70% of pairs")),
        feasibility=("every delivery has at least two quotes", "total driver capacity covers the deliveries"),
        size="4-6 drivers, 3-8 deliveries, up to 48 quotes",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="min", decisions={"quotes": "accepted"},
        objective=Trace(id="cost", role="objective", text="minimize the total cost of accepted quotes", fields=("quotes.cost",)),
        constraints=(
            Trace(id="cover", role="explicit", text="every delivery has exactly one accepted quote", fields=("quotes.delivery_id", "deliveries.delivery_id")),
            Trace(id="capacity", role="implicit", text="a driver takes at most max_jobs deliveries", fields=("quotes.driver_id", "drivers.max_jobs")),
            Trace(id="window", role="implicit", text="a driver does at most one delivery per time window", fields=("deliveries.window", "quotes.driver_id")),
            Trace(id="quoted_only", role="implicit", text="only drivers who quoted a delivery can take it", fields=("quotes.*",)),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        m = rng.randint(4, 6)
        names = _people(_namer(rng), m)
        drivers: dict[str, dict[str, Any]] = {}
        for i in range(1, m + 1):
            k = _key("DRV", i)
            drivers[k] = {
                "driver_id": k,
                "name": names[i - 1],
                "home_depot": rng.choice(CITIES),
                "max_jobs": rng.choice((1, 2, 2)),
            }
        cap = sum(d["max_jobs"] for d in drivers.values())
        n = min(cap, rng.randint(max(3, m - 1), m + 2))
        deliveries = {}
        for j in range(1, n + 1):
            k = _key("DEL", j)
            deliveries[k] = {
                "delivery_id": k,
                "reference": f"DL-{rng.randint(10000, 99999)}",
                "window": rng.choice(("morning", "afternoon", "evening")),
            }
        quotes: dict[str, dict[str, Any]] = {}
        for dk in sorted(deliveries):
            pool = [d for d in sorted(drivers) if rng.random() < 0.7]
            while len(pool) < 2:
                pool = sorted(set(pool) | {rng.choice(sorted(drivers))})
            for drv in pool:
                k = _key("QUO", len(quotes) + 1)
                cost = rng.choice((80, 100, 120)) if ties else rng.randint(40, 220)
                quotes[k] = {
                    "quote_id": k,
                    "driver_id": drv,
                    "delivery_id": dk,
                    "cost": float(cost),
                    "status": "open",
                }
        return {"drivers": drivers, "deliveries": deliveries, "quotes": quotes}

    def model(self, state: Mapping[str, Any]) -> Milp:
        keys = sorted(state["quotes"])
        q = [state["quotes"][k] for k in keys]
        rows = [Row(name=f"cover:{d}", coefs={i: 1.0 for i, r in enumerate(q) if r["delivery_id"] == d}, lower=1, upper=1)
                for d in sorted(state["deliveries"])]  # fmt: skip
        for drv, rec in sorted(state["drivers"].items()):
            mine = {i: 1.0 for i, r in enumerate(q) if r["driver_id"] == drv}
            if mine:
                rows.append(Row(name=f"capacity:{drv}", coefs=mine, upper=rec["max_jobs"]))
            for window in ("morning", "afternoon", "evening"):
                same = {i: 1.0 for i in mine if state["deliveries"][q[i]["delivery_id"]]["window"] == window}
                if len(same) > 1:
                    rows.append(Row(name=f"window:{drv}:{window}", coefs=same, upper=1))
        return Milp(
            sense="min", objective=[r["cost"] for r in q], rows=rows, binaries=[("quotes", k) for k in keys]
        )

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        load: dict[str, int] = {}
        windows: dict[str, set[str]] = {}
        picked = []
        for dk in sorted(state["deliveries"]):
            window = state["deliveries"][dk]["window"]
            offers = sorted(
                (r for r in state["quotes"].values() if r["delivery_id"] == dk),
                key=lambda r: (r["cost"], r["quote_id"]),
            )
            for r in offers:
                drv = r["driver_id"]
                if load.get(drv, 0) < state["drivers"][drv]["max_jobs"] and window not in windows.get(
                    drv, set()
                ):
                    load[drv] = load.get(drv, 0) + 1
                    windows.setdefault(drv, set()).add(window)
                    picked.append(r["quote_id"])
                    break
        return {"quotes": sorted(picked)}

    phrasings = (
        # 1. the dispatcher, plainly
        "[We have {n} deliveries to hand out to our drivers today and each driver has sent prices for the jobs they "
        "can do.|Today there are {n} deliveries to hand out, and each of our drivers has sent prices for the jobs "
        "they can do.] "
        "[Some quotes were already accepted by a colleague, possibly badly."
        "|A colleague already accepted some of the quotes, possibly badly."
        "|A colleague has already accepted some quotes, and maybe not the right ones.] "
        "[Make sure every delivery ends up with exactly one driver at the lowest total cost we can get, without "
        "overloading anyone or giving a driver two jobs in the same time window.|Every delivery should end up with "
        "exactly one driver, at the lowest total cost we can get, with no one overloaded and no driver given two "
        "jobs in the same time window.] "
        "[Update the accepted quotes in the system|Bring the accepted quotes in the system in line with that] "
        "and tell me the total cost.",
        # 2. a hurried dispatch note with the day's numbers
        "[Dispatch for today, quick:|Quick dispatch job for today:] {n_word} deliveries ({windows}) and "
        "{n_drivers_word} drivers ({drivers}) who have quoted for the jobs they can take. "
        "[Every delivery needs exactly one driver, nobody gets overloaded and no driver gets two jobs in the same "
        "time window.|Exactly one driver per delivery, nobody overloaded, no driver with two jobs in the same time "
        "window.] "
        "[Go for the lowest total cost.|Cheapest total cost wins.|Keep the total cost as low as you can.] "
        "[Some quotes were accepted earlier by someone else and may be wrong, so fix the accepted quotes in the system"
        "|Someone accepted a few quotes earlier and they may be wrong; fix the accepted quotes in the system] "
        "and [give me|send me] the total cost.",
        # 3. a careful planner
        "[I'm planning today's delivery assignments.|I'm working out who takes which delivery today.] "
        "[The drivers have quoted prices for the deliveries they are able to do, and I'd like all {n} deliveries "
        "covered by exactly one driver each, with the total cost as low as possible.|Drivers based in {depots} have "
        "quoted prices for the deliveries they can do; all {n} deliveries need exactly one driver each, and the "
        "total cost should be as low as possible.] "
        "[Please don't overload any driver, and never give one driver two deliveries in the same time window."
        "|No driver should be overloaded, and none should get two deliveries in the same time window.] "
        "[A colleague has already accepted some quotes, possibly badly; the accepted quotes in the system should end "
        "up matching your plan.|Some quotes in the system were already accepted by a colleague, possibly badly; the "
        "accepted quotes there should end up matching your plan.] "
        "[When you're done, tell me the total cost.|Please report the total cost when you're done.]",
        # 4. a note passed on from the depot
        'Passing on a note from the [depot supervisor|morning dispatcher]: "'
        "[{drivers} have sent their prices for today's {n} deliveries."
        "|Prices for today's {n} deliveries are in from {drivers}.] "
        "[Someone already accepted a few quotes, and probably not well."
        "|A few quotes were accepted already, probably not well.] "
        "[Each delivery needs exactly one driver, the total cost should be as low as we can get it, no one should be "
        "overloaded and no driver should have two jobs in the same time window.|Each delivery needs exactly one "
        "driver and the total cost should be as low as we can get it, but no one should be overloaded and no driver "
        'should take two jobs in the same time window.]" '
        "[Can you sort out the accepted quotes in the system and tell me the total cost?"
        "|Could you fix the accepted quotes in the system accordingly and let me know the total cost?]",
        # 5. the cost question first
        "[What's the lowest total cost at which we can cover today's {n} deliveries?"
        "|What is the cheapest total cost for covering today's {n} deliveries?] "
        "[Each has to go to exactly one driver, picked from the prices the drivers sent for the jobs they can do;"
        "|Each one goes to exactly one driver, assigned from the prices drivers sent for the jobs they can do;] "
        "don't overload anyone, and don't give any driver two jobs in the same time window. "
        "[A few quotes were accepted already by a colleague, possibly badly"
        "|A colleague has accepted a few quotes already, possibly badly]: "
        "make the accepted quotes in the system reflect your assignment and [report|tell me] the total cost.",
        # 6. the time windows first
        "Today's {n} deliveries fall into time windows ({windows}), "
        "[and no driver can take two jobs in the same window or be overloaded."
        "|and no driver may be overloaded or take two jobs in the same window.] "
        "[Using the quotes the drivers have sent, give every delivery exactly one driver and keep the total cost as "
        "low as possible.|From the quotes the drivers sent, assign exactly one driver to every delivery at the lowest "
        "total cost.] "
        "[Some quotes in the system were accepted earlier by a colleague and may be a poor choice; correct the "
        "accepted quotes there|A colleague accepted some quotes earlier, perhaps poorly; correct the accepted quotes "
        "in the system] and [tell me|let me know] the total cost.",
        # 7. a chat message naming the drivers
        "[Hi!|Morning!] Can you hand out today's {n} deliveries to {drivers}? They have each quoted for the jobs they "
        "can do. "
        "[Rules: exactly one driver per delivery, nobody overloaded, no driver with two jobs in the same time window, "
        "and the total cost as low as possible.|The usual rules: exactly one driver per delivery, nobody overloaded "
        "and no driver with two jobs in the same time window, all at the lowest total cost.] "
        "[Heads-up: a colleague already accepted some quotes and may have got it wrong."
        "|Heads-up: some quotes were already accepted by a colleague, maybe wrongly.] "
        "[Please update the accepted quotes in the system and send me the total cost."
        "|Update the accepted quotes in the system, then send me the total cost.]",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        quoting = sorted({q["driver_id"] for q in state["quotes"].values()})
        drivers = [state["drivers"][k]["name"].split()[0] for k in quoting]
        depots = sorted({state["drivers"][k]["home_depot"] for k in quoting})
        windows = [d["window"] for d in state["deliveries"].values()]
        per_window = [
            f"{count_word(windows.count(w))} in the {w}"
            for w in ("morning", "afternoon", "evening")
            if windows.count(w)
        ]
        n = len(state["deliveries"])
        return {
            "n": str(n),
            "n_word": count_word(n),
            "n_drivers_word": count_word(len(drivers)),
            "drivers": listing(drivers),
            "depots": listing(depots),
            "windows": listing(per_window),
        }


class Shifts(Family):
    name = "shift_scheduling"
    title = "Shift staffing with conflicts"
    taxonomy_id = 30006  # Scheduling / Team Schedule Coordination
    class_name = "ShiftRoster"
    description = "A team roster: employees with hourly rates and shift limits, shifts over several days, and who is available for which shift."
    sense = "min"
    objective_field = "total_cost"
    evaluator = staticmethod(evaluators.evaluate_shifts)
    entities = (
        entity("employee", "employees", "EMP", "A team member.", [
            attr("name", "str"), attr("hourly_rate", "money"), attr("max_shifts", "int", "shifts this person may work this week"),
        ]),
        entity("shift", "shifts", "SHF", "A shift that needs a number of people.", [
            attr("label", "str"), attr("day", "date"), attr("start_hour", "int"), attr("end_hour", "int"),
            attr("headcount", "int", "people needed"),
        ]),
        entity("availability", "availabilities", "AVL", "An employee's availability for one shift; scheduling it staffs the shift.", [
            attr("employee_id", "ref", ref="employee"), attr("shift_id", "ref", ref="shift"),
            attr("status", "enum", enum=("available", "scheduled"), default="available"),
        ]),
    )  # fmt: skip
    decisions = (Decision("availability", "scheduled", "available", "schedule_availability", "release_availability",
                          "Schedule the employee for the shift of this availability.", "Take the employee off that shift (back to available)."),)  # fmt: skip
    contract = InputContract(
        family=name, summary="staff every shift with its headcount from available people at minimum wage cost",
        fields=_f(("employees.hourly_rate", "wage per hour", "currency units per hour", "18-40"),
                  ("employees.max_shifts", "weekly shift limit", "count", "2-3"),
                  ("shifts.day/start_hour/end_hour", "when the shift runs; overlaps conflict", "hours", "6-22, 4-8 h long"),
                  ("shifts.headcount", "people needed", "count", "1-2"),
                  ("availabilities", "who can work which shift", "pairs", "about 60% of pairs")),
        feasibility=("each shift has more available people than it needs", "overlapping shifts cannot share a person"),
        size="5-7 employees, 6-9 shifts over 3 days",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="min", decisions={"availabilities": "scheduled"},
        objective=Trace(id="wages", role="objective", text="minimize total wages (rate times shift hours)", fields=("employees.hourly_rate", "shifts.start_hour", "shifts.end_hour")),
        constraints=(
            Trace(id="headcount", role="explicit", text="every shift gets exactly its headcount", fields=("shifts.headcount", "availabilities.shift_id")),
            Trace(id="max_shifts", role="explicit", text="nobody works more shifts than their limit", fields=("employees.max_shifts",)),
            Trace(id="overlap", role="implicit", text="nobody works two shifts that overlap in time", fields=("shifts.day", "shifts.start_hour", "shifts.end_hour")),
            Trace(id="available_only", role="implicit", text="only available people are scheduled", fields=("availabilities.*",)),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        employees = {}
        names = _people(_namer(rng), 7)
        for i in range(1, rng.randint(5, 7) + 1):
            k = _key("EMP", i)
            rate = rng.choice((20, 25, 30)) if ties else rng.randint(18, 40)
            employees[k] = {
                "employee_id": k,
                "name": names[i - 1],
                "hourly_rate": float(rate),
                "max_shifts": rng.choice((2, 3)),
            }
        shifts: dict[str, dict[str, Any]] = {}
        day0 = date(2026, 3, 9)
        for j in range(1, rng.randint(6, 9) + 1):
            k = _key("SHF", j)
            start = rng.choice((6, 8, 12, 14, 16))
            length = rng.choice((4, 6, 8))
            day = (day0 + timedelta(days=rng.randint(0, 2))).isoformat()
            end = min(22, start + length)
            label = f"{date.fromisoformat(day):%A} {start:02d}:00-{end:02d}:00"
            shifts[k] = {"shift_id": k, "label": label, "day": day, "start_hour": start,
                         "end_hour": end, "headcount": rng.choice((1, 1, 2))}  # fmt: skip
        avail: dict[str, dict[str, Any]] = {}
        for sk in sorted(shifts):
            pool = [e for e in sorted(employees) if rng.random() < 0.6]
            while len(pool) < shifts[sk]["headcount"] + 1:
                pool = sorted(set(pool) | {rng.choice(sorted(employees))})
            for e in pool:
                k = _key("AVL", len(avail) + 1)
                avail[k] = {"availability_id": k, "employee_id": e, "shift_id": sk, "status": "available"}
        return {"employees": employees, "shifts": shifts, "availabilities": avail}

    @staticmethod
    def _overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        return bool(
            a["day"] == b["day"] and a["start_hour"] < b["end_hour"] and b["start_hour"] < a["end_hour"]
        )

    def model(self, state: Mapping[str, Any]) -> Milp:
        keys = sorted(state["availabilities"])
        av = [state["availabilities"][k] for k in keys]
        shifts, employees = state["shifts"], state["employees"]
        cost = [
            employees[a["employee_id"]]["hourly_rate"]
            * (shifts[a["shift_id"]]["end_hour"] - shifts[a["shift_id"]]["start_hour"])
            for a in av
        ]
        rows = [Row(name=f"headcount:{s}", coefs={i: 1.0 for i, a in enumerate(av) if a["shift_id"] == s},
                    lower=shifts[s]["headcount"], upper=shifts[s]["headcount"]) for s in sorted(shifts)]  # fmt: skip
        for e, rec in sorted(employees.items()):
            mine = [i for i, a in enumerate(av) if a["employee_id"] == e]
            if mine:
                rows.append(
                    Row(name=f"max_shifts:{e}", coefs={i: 1.0 for i in mine}, upper=rec["max_shifts"])
                )
            for x, i in enumerate(mine):
                for j in mine[x + 1 :]:
                    if self._overlap(shifts[av[i]["shift_id"]], shifts[av[j]["shift_id"]]):
                        rows.append(
                            Row(name=f"overlap:{e}:{keys[i]}:{keys[j]}", coefs={i: 1.0, j: 1.0}, upper=1)
                        )
        return Milp(sense="min", objective=cost, rows=rows, binaries=[("availabilities", k) for k in keys])

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        shifts, employees = state["shifts"], state["employees"]
        taken: dict[str, list[str]] = {}
        picked = []
        for sk in sorted(shifts, key=lambda s: (shifts[s]["day"], shifts[s]["start_hour"], s)):
            options = sorted((a for a in state["availabilities"].values() if a["shift_id"] == sk),
                             key=lambda a: (employees[a["employee_id"]]["hourly_rate"], a["availability_id"]))  # fmt: skip
            need = shifts[sk]["headcount"]
            for a in options:
                if need == 0:
                    break
                mine = taken.get(a["employee_id"], [])
                if len(mine) < employees[a["employee_id"]]["max_shifts"] and not any(
                    self._overlap(shifts[o], shifts[sk]) for o in mine
                ):
                    taken.setdefault(a["employee_id"], []).append(sk)
                    picked.append(a["availability_id"])
                    need -= 1
        return {"availabilities": sorted(picked)}

    phrasings = (
        # 1. the manager, plainly
        "[Please finish next week's roster.|Please finish the roster for the week of {week}.|The roster for {days} still "
        "needs finishing.] "
        "[Every shift needs exactly the number of people it asks for, people can only work shifts they said they are "
        "available for and never more shifts than their weekly limit.|Each shift has to get exactly the number of "
        "people it asks for; people may only work shifts they said they are available for, and never more shifts "
        "than their weekly limit.] "
        "[Keep the wage bill as low as possible and make sure nobody is booked on two shifts at the same time."
        "|Make sure nobody is booked on two shifts at the same time, and keep the wage bill as low as possible.] "
        "[A partial roster is already in the system; fix it there and tell me the total wage cost."
        "|There is a partial roster in the system already: fix it there, and tell me the total wage cost.]",
        # 2. in a hurry, with the team's numbers
        "[Need the roster for {days} done today:|Roster for {days}, needed today:] "
        "{n_shifts} shifts, {n_people_word} people ({people}). "
        "[Rules: each shift gets exactly the headcount it needs, only people who marked themselves available for it, "
        "nobody over their weekly limit, nobody on two shifts at the same time.|Each shift gets exactly the headcount "
        "it asks for, from people available for it only; nobody goes over their weekly limit or works two shifts at "
        "the same time.] "
        "[Cheapest wage bill wins.|Keep the wages as low as possible.|Lowest wage bill possible, please.] "
        "[There's a half-done roster in the system already; fix it in place and send me the total wage cost."
        "|The system has a half-done roster; fix it in place and give me the total wage cost.]",
        # 3. a careful planner listing the conditions
        "I'm putting together the staffing plan for the week of {week} ({n_shifts} shifts {on_days}). "
        "[My aim is the lowest possible total wage cost, subject to these conditions:"
        "|The goal is to keep the total wage cost as low as possible while meeting four conditions:] "
        "[each shift is staffed with exactly the number of people it requires; only people who declared themselves "
        "available for a shift may work it; nobody exceeds their weekly limit of shifts; and nobody is scheduled "
        "for two shifts at the same time.|only people who declared themselves available for a shift may work it; "
        "each shift is staffed with exactly the number of people it requires; nobody is scheduled for two shifts at "
        "the same time; and nobody exceeds their weekly limit of shifts.] "
        "[A partial roster is already entered in the system.|Part of the roster has already been entered in the "
        "system.] "
        "[Please correct it there and report the total wage cost."
        "|Please complete and correct it there, then report the total wage cost.]",
        # 4. a note forwarded from the manager
        'Forwarding from [the store manager|our team lead]: "'
        "[Can someone finish next week's roster?|Could somebody complete the roster for {days}?] "
        "{people} have given their availability. "
        "[Each shift needs exactly the number of people it asks for, only people available for a shift can work it, "
        "nobody should go over their weekly limit or be on two shifts at the same time, and the wage bill should be "
        "as low as possible.|The wage bill should be as low as possible, but each shift needs exactly the number of "
        "people it asks for, only people available for a shift can work it, and nobody should go over their weekly "
        'limit or be on two shifts at the same time.]" '
        "[A partial roster is already in the system; please fix it there and tell me the total wage cost."
        "|Someone has started the roster in the system already; please fix it there and let me know the total "
        "wage cost.]",
        # 5. the wage question first
        "[What's the lowest wage bill we can staff the {n_shifts} shifts {on_days} with?"
        "|How low can we keep the wage bill for the {n_shifts} shifts {on_days}?] "
        "[Every shift must have exactly the number of people it asks for, drawn only from those available for it; "
        "nobody may exceed their weekly limit or work two shifts at the same time.|Each shift must be staffed with "
        "exactly the number of people it asks for, using only people available for it, and nobody may work two "
        "shifts at the same time or exceed their weekly limit.] "
        "[Someone has started the roster in the system|The roster in the system is partly filled in already]: "
        "fix it there so it shows your plan, and tell me the total wage cost.",
        # 6. the standing rules first
        "[Scheduling rules for next week, as always:|The usual scheduling rules apply for next week:] "
        "people only work shifts they're available for, never more than their weekly limit, and never two shifts "
        "at the same time. "
        "[Within those rules, I need every one of the {n_shifts} shifts staffed with exactly the number of people it "
        "needs, at the lowest total wages.|Within them, staff each of the {n_shifts} shifts {on_days} with exactly "
        "the number of people it needs, keeping the total wages as low as possible.] "
        "[The roster in the system is only partly done; complete and correct it there,"
        "|Only part of the roster is in the system so far; complete and correct it there,] "
        "and [tell me|let me know] the total wage cost.",
        # 7. a chat message
        "Hey, could you wrap up the roster for {days}? {n_slots} spots to fill across {n_shifts} shifts with "
        "{n_people_word} people[ ({people})|]. "
        "[Every shift should get exactly the number of people it asks for, only from people available for it, "
        "nobody above their weekly limit and no one on two shifts at the same time.|Each shift should get exactly "
        "the number of people it asks for, all of them available for it; nobody above their weekly limit, no one on "
        "two shifts at the same time.] "
        "[Keep wages as low as you can.|And keep the wage bill as low as you can.] "
        "[Someone began the roster in the system already; fix it there and let me know the total wage cost."
        "|There's a partial roster in the system; fix it there and let me know the total wage cost.]",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        shifts = state["shifts"].values()
        available = {a["employee_id"] for a in state["availabilities"].values()}
        people = [state["employees"][k]["name"].split()[0] for k in sorted(available)]
        days = sorted({date.fromisoformat(s["day"]) for s in shifts})
        names = [d.strftime("%A") for d in days]
        consecutive = len(days) > 2 and (days[-1] - days[0]).days == len(days) - 1
        monday = days[0] - timedelta(days=days[0].weekday())
        return {
            "week": f"{monday.day} {monday.strftime('%B')}",
            "days": f"{names[0]} to {names[-1]}" if consecutive else listing(names),
            "on_days": f"from {names[0]} to {names[-1]}" if consecutive else f"on {listing(names)}",
            "n_shifts": str(len(state["shifts"])),
            "n_slots": str(sum(s["headcount"] for s in shifts)),
            "n_people_word": count_word(len(people)),
            "people": listing(people),
        }


class Facility(Family):
    name = "facility_selection"
    title = "Supplier selection with single sourcing"
    taxonomy_id = 20065  # Manufacturing / Supply Chain Specialist
    class_name = "SupplierNetwork"
    description = "A supply network: candidate suppliers with a contract fee and capacity, stores with weekly demand, and shipping lanes with unit costs."
    sense = "min"
    objective_field = "total_cost"
    evaluator = staticmethod(evaluators.evaluate_facility)
    entities = (
        entity("supplier", "suppliers", "SUP", "A candidate supplier.", [
            attr("name", "str"), attr("fixed_fee", "money", "weekly contract fee if contracted"),
            attr("capacity", "int", "units per week it can ship"),
            attr("status", "enum", enum=("inactive", "contracted"), default="inactive"),
        ]),
        entity("store", "stores", "STO", "A store that must be supplied by exactly one supplier.", [
            attr("name", "str"), attr("city", "str"), attr("demand", "int", "units per week"),
        ]),
        entity("lane", "lanes", "LAN", "A possible shipping lane from a supplier to a store.", [
            attr("supplier_id", "ref", ref="supplier"), attr("store_id", "ref", ref="store"),
            attr("unit_cost", "money", "cost per unit shipped"), attr("status", "enum", enum=("unused", "active"), default="unused"),
        ]),
    )  # fmt: skip
    decisions = (
        Decision("supplier", "contracted", "inactive", "contract_supplier", "end_supplier_contract",
                 "Sign a weekly contract with a supplier.", "End a supplier's contract (back to inactive)."),
        Decision("lane", "active", "unused", "activate_lane", "deactivate_lane",
                 "Start shipping over this lane.", "Stop using this lane."),
    )  # fmt: skip
    contract = InputContract(
        family=name, summary="contract suppliers and give each store one lane, minimizing fees plus shipping",
        fields=_f(("suppliers.fixed_fee", "weekly fee of a contract", "currency units", "2000-9000"),
                  ("suppliers.capacity", "weekly shipping capacity", "units", "60-200"),
                  ("stores.demand", "weekly demand", "units", "10-60"),
                  ("lanes.unit_cost", "shipping cost per unit", "currency units", "1-9")),
        feasibility=("every store has two or more lanes", "total capacity exceeds total demand by 30%"),
        size="3-5 suppliers, 4-7 stores, up to 35 lanes",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="min", decisions={"suppliers": "contracted", "lanes": "active"},
        objective=Trace(id="cost", role="objective", text="minimize contract fees plus shipping cost (unit cost times demand)",
                        fields=("suppliers.fixed_fee", "lanes.unit_cost", "stores.demand")),
        constraints=(
            Trace(id="single_source", role="explicit", text="every store is served by exactly one active lane", fields=("lanes.store_id",)),
            Trace(id="contracted", role="implicit", text="an active lane's supplier must be contracted", fields=("lanes.supplier_id", "suppliers.status")),
            Trace(id="capacity", role="explicit", text="a supplier ships no more than its capacity", fields=("suppliers.capacity", "stores.demand")),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        stores: dict[str, dict[str, Any]] = {}
        for j in range(1, rng.randint(4, 7) + 1):
            k = _key("STO", j)
            stores[k] = {
                "store_id": k,
                "name": f"{CITIES[j - 1]} store",
                "city": CITIES[j - 1],
                "demand": rng.randrange(10, 61, 5),
            }
        total = sum(s["demand"] for s in stores.values())
        m = rng.randint(3, 5)
        companies = _companies(_namer(rng), m)
        suppliers = {}
        for i in range(1, m + 1):
            k = _key("SUP", i)
            fee = rng.choice((3000, 5000)) if ties else rng.randrange(2000, 9001, 250)
            rng.randrange(5)  # the draw that once picked a name prefix, kept so instances stay as they were
            suppliers[k] = {"supplier_id": k, "name": companies[i - 1],
                            "fixed_fee": float(fee), "capacity": max(60, int(math.ceil(1.3 * total / m * rng.uniform(1.0, 2.0)))),
                            "status": "inactive"}  # fmt: skip
        lanes: dict[str, dict[str, Any]] = {}
        for sk in sorted(stores):
            pool = [s for s in sorted(suppliers) if rng.random() < 0.75]
            while len(pool) < 2:
                pool = sorted(set(pool) | {rng.choice(sorted(suppliers))})
            for s in pool:
                k = _key("LAN", len(lanes) + 1)
                unit = rng.choice((2.0, 4.0)) if ties else rng.randrange(2, 19) / 2
                lanes[k] = {
                    "lane_id": k,
                    "supplier_id": s,
                    "store_id": sk,
                    "unit_cost": float(unit),
                    "status": "unused",
                }
        return {"suppliers": suppliers, "stores": stores, "lanes": lanes}

    def model(self, state: Mapping[str, Any]) -> Milp:
        sup = sorted(state["suppliers"])
        lane_keys = sorted(state["lanes"])
        lanes = [state["lanes"][k] for k in lane_keys]
        nsup = len(sup)
        objective = [state["suppliers"][s]["fixed_fee"] for s in sup]
        objective += [ln["unit_cost"] * state["stores"][ln["store_id"]]["demand"] for ln in lanes]
        rows = [Row(name=f"single_source:{st}", coefs={nsup + i: 1.0 for i, ln in enumerate(lanes) if ln["store_id"] == st}, lower=1, upper=1)
                for st in sorted(state["stores"])]  # fmt: skip
        for si, s in enumerate(sup):
            coefs = {
                nsup + i: float(state["stores"][ln["store_id"]]["demand"])
                for i, ln in enumerate(lanes)
                if ln["supplier_id"] == s
            }
            coefs[si] = -float(state["suppliers"][s]["capacity"])
            rows.append(Row(name=f"capacity:{s}", coefs=coefs, upper=0))
            for i, ln in enumerate(lanes):
                if ln["supplier_id"] == s:
                    rows.append(
                        Row(name=f"contracted:{lane_keys[i]}", coefs={nsup + i: 1.0, si: -1.0}, upper=0)
                    )
        return Milp(sense="min", objective=objective, rows=rows,
                    binaries=[("suppliers", s) for s in sup] + [("lanes", k) for k in lane_keys])  # fmt: skip

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        load: dict[str, int] = {}
        active = []
        for sk in sorted(state["stores"], key=lambda s: -state["stores"][s]["demand"]):
            demand = state["stores"][sk]["demand"]
            options = sorted(
                (ln for ln in state["lanes"].values() if ln["store_id"] == sk),
                key=lambda ln: (ln["unit_cost"], ln["lane_id"]),
            )
            for ln in options:
                if (
                    load.get(ln["supplier_id"], 0) + demand
                    <= state["suppliers"][ln["supplier_id"]]["capacity"]
                ):
                    load[ln["supplier_id"]] = load.get(ln["supplier_id"], 0) + demand
                    active.append(ln["lane_id"])
                    break
        return {"suppliers": sorted(load), "lanes": sorted(active)}

    phrasings = (
        # 1. the buyer, plainly
        "[We are re-tendering supply for our {n_stores_word} stores ({cities}).|Supply for our {n_stores_word} stores "
        "in {cities} is being re-tendered.] "
        "[Each store must get all its weekly volume from a single supplier over one of the available shipping lanes, "
        "and no supplier may ship more than it can handle.|No supplier may ship more than it can handle, and each "
        "store must get all its weekly volume from a single supplier over one of the available shipping lanes.] "
        "[Choose which suppliers to contract and which lanes to use so that contract fees plus shipping costs are as "
        "low as possible.|Decide which suppliers to contract and which lanes to use, keeping contract fees plus "
        "shipping costs as low as possible.] "
        "[Some contracts and lanes are already switched on from last quarter"
        "|A few of last quarter's contracts and lanes are still switched on]; "
        "leave the system reflecting only the new plan and [report|tell me] the total weekly cost.",
        # 2. in a hurry
        "[Supplier decision needed today for the stores in {cities}."
        "|Need the supplier plan for our stores in {cities} today.] "
        "[Rules: every store gets all of its weekly volume from exactly one supplier over one of the available "
        "shipping lanes, and no supplier ships more than it can handle.|Every store takes all its weekly volume from "
        "exactly one supplier over one of the available shipping lanes; no supplier ships more than it can handle.] "
        "[Lowest contract fees plus shipping costs wins.|Keep contract fees plus shipping costs as low as possible.] "
        "[Last quarter's contracts and lanes are still switched on in places, so the system should show only the new "
        "plan when you're done.|Some of last quarter's contracts and lanes are still switched on; when you're done "
        "the system should show only the new plan.] "
        "[Send me|Give me] the total weekly cost.",
        # 3. a careful planner with the network's numbers
        "I'm reviewing our supply network for the coming quarter: {n_suppliers_word} candidate suppliers "
        "({suppliers}) and {n_stores_word} stores with {demand} units of weekly demand between them. "
        "[I need to decide which suppliers to contract and which shipping lanes to use, minimising the sum of "
        "contract fees and shipping costs.|The question is which suppliers to contract and which shipping lanes to "
        "use so that the sum of contract fees and shipping costs is minimised.] "
        "[Each store must be served entirely by a single supplier over one of its available lanes, and no supplier "
        "may be asked to ship more than it can handle.|Two conditions hold: each store is served entirely by a "
        "single supplier over one of its available lanes, and no supplier ships more than it can handle.] "
        "[The system still has some of last quarter's contracts and lanes switched on;"
        "|Some of last quarter's contracts and lanes are still switched on in the system;] "
        "please leave it reflecting only the new plan and report the total weekly cost.",
        # 4. a note forwarded from procurement
        'Forwarded from [procurement|the supply team]: "'
        "[For the re-tender, please pick the suppliers to contract and the shipping lanes to use for our stores in "
        "{cities}.|We're re-tendering: please choose which suppliers to contract and which shipping lanes to use for "
        "our stores in {cities}.] "
        "[Every store takes all of its weekly volume from a single supplier over one of the available lanes, no "
        "supplier ships more than it can handle, and contract fees plus shipping costs should come out as low as "
        "possible.|Contract fees plus shipping costs should come out as low as possible, with every store taking all "
        "of its weekly volume from a single supplier over one of the available lanes and no supplier shipping more "
        'than it can handle.]" '
        "[Some of last quarter's contracts and lanes are still switched on in the system. Please make it reflect only "
        "the new plan and tell me the total weekly cost.|Note that last quarter's contracts and lanes are partly "
        "still switched on in the system; please leave it reflecting only the new plan and tell me the total weekly "
        "cost.]",
        # 5. the cost question first
        "[What's the lowest total of contract fees and shipping costs we can reach for supplying our {n_stores} "
        "stores each week?|How low can we get contract fees plus shipping costs for supplying our {n_stores} stores "
        "each week?] "
        "[A store must be supplied by a single supplier over one of the available shipping lanes, and no supplier can "
        "ship more than it can handle.|No supplier can ship more than it can handle, and each store has to be "
        "supplied by a single supplier over one of the available shipping lanes.] "
        "[Decide which suppliers to contract and which lanes to use.|You decide the contracts and the lanes.] "
        "Contracts and lanes from last quarter are partly still switched on; [clean them up|sort them out] so the "
        "system reflects only the new plan, and report the total weekly cost.",
        # 6. capacity first
        "Our candidate suppliers ({suppliers}) each have a limit on what they can ship, "
        "[and none of them may ship more than it can handle.|and no supplier may ship more than it can handle.] "
        "[Within that, every store ({cities}) needs all of its weekly volume from a single supplier over one of the "
        "available shipping lanes.|Every store ({cities}) must also get all of its weekly volume from a single "
        "supplier over one of the available shipping lanes.] "
        "[Choose the contracts and lanes that keep contract fees plus shipping costs as low as possible."
        "|Pick the contracts and lanes with the lowest contract fees plus shipping costs.] "
        "[Some contracts and lanes are still on from last quarter|Last quarter's setup is still partly switched on]; "
        "the system should end up reflecting only the new plan. [Report|Tell me] the total weekly cost.",
        # 7. a chat message
        "[Hi|Hello], [can you redo the supplier setup for our stores in {cities}?|could you work out a new supply plan "
        "for the stores in {cities}?] "
        "[Each store should be supplied by just one supplier over one of the available shipping lanes, no supplier "
        "should ship more than it can handle, and I want contract fees plus shipping costs as low as possible."
        "|I want contract fees plus shipping costs as low as possible, with each store supplied by just one supplier "
        "over one of the available shipping lanes and no supplier shipping more than it can handle.] "
        "[Heads-up: some contracts and lanes from last quarter are still switched on."
        "|Heads-up: last quarter's contracts and lanes are still partly switched on.] "
        "[Leave the system reflecting only the new plan and let me know the total weekly cost."
        "|Please leave the system reflecting only the new plan, and let me know the total weekly cost.]",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        stores = [state["stores"][k] for k in sorted(state["stores"])]
        suppliers = [state["suppliers"][k]["name"] for k in sorted(state["suppliers"])]
        return {
            "cities": listing([s["city"] for s in stores]),
            "n_stores": str(len(stores)),
            "n_stores_word": count_word(len(stores)),
            "suppliers": listing(suppliers),
            "n_suppliers_word": count_word(len(suppliers)),
            "demand": str(sum(s["demand"] for s in stores)),
        }


class Procurement(Family):
    name = "procurement_mix"
    title = "Multi-constraint procurement mix"
    taxonomy_id = 20072  # Retail / Purchasing Specialist
    class_name = "ProcurementDesk"
    description = "A purchasing desk: equipment requirements with minimum quantities, vendor offers that bundle several items, and the purchasing policy."
    sense = "min"
    objective_field = "total_cost"
    evaluator = staticmethod(evaluators.evaluate_procurement)
    entities = (
        entity("policy", "policies", "POL", "The purchasing policy.", [
            attr("name", "str"), attr("max_offers_per_vendor", "int", "at most this many offers may be ordered from one vendor"),
        ]),
        entity("requirement", "requirements", "REQ", "An item the team needs, with the minimum quantity.", [
            attr("name", "str"), attr("minimum", "int"),
        ]),
        entity("offer", "offers", "OFR", "A vendor's bundled offer at a fixed price.", [
            attr("vendor", "str"), attr("title", "str"), attr("price", "money"),
            attr("status", "enum", enum=("available", "ordered"), default="available"),
        ]),
        entity("offer_line", "offer_lines", "OLN", "How many units of one required item an offer contains.", [
            attr("offer_id", "ref", ref="offer"), attr("requirement_id", "ref", ref="requirement"), attr("units", "int"),
        ]),
    )  # fmt: skip
    decisions = (Decision("offer", "ordered", "available", "order_offer", "cancel_offer",
                          "Place an order for a whole offer.", "Cancel an order for an offer (back to available)."),)  # fmt: skip
    contract = InputContract(
        family=name, summary="order a set of bundled offers covering every minimum quantity at minimum total price",
        fields=_f(("requirements.minimum", "units needed of an item", "units", "10-40"),
                  ("offer_lines.units", "units of an item inside an offer", "units", "5-25"),
                  ("offers.price", "price of an offer", "currency units", "about unit value times units, +/-20%"),
                  ("offers.vendor", "who sells it, for the per-vendor cap", "name", "3-4 vendors"),
                  ("policies.max_offers_per_vendor", "per-vendor cap", "count", "2-3")),
        feasibility=("ordering every allowed offer covers every minimum", "instances the solver finds infeasible are discarded"),
        size="3-4 requirements, 8-12 offers",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="min", decisions={"offers": "ordered"},
        objective=Trace(id="spend", role="objective", text="minimize the total price of ordered offers", fields=("offers.price",)),
        constraints=(
            Trace(id="coverage", role="explicit", text="ordered offers contain at least the minimum of every item", fields=("offer_lines.units", "requirements.minimum")),
            Trace(id="vendor_cap", role="implicit", text="no more offers from one vendor than the policy allows", fields=("offers.vendor", "policies.max_offers_per_vendor")),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        items = [("laptops", 900), ("monitors", 250), ("docking stations", 180), ("headsets", 90)]
        reqs: dict[str, dict[str, Any]] = {}
        for i, (name, _) in enumerate(items[: rng.randint(3, 4)], start=1):
            k = _key("REQ", i)
            reqs[k] = {"requirement_id": k, "name": name, "minimum": rng.randrange(10, 41, 5)}
        vendors = _companies(_namer(rng), 4)[: rng.randint(3, 4)]
        offers: dict[str, dict[str, Any]] = {}
        lines: dict[str, dict[str, Any]] = {}
        for o in range(1, rng.randint(8, 12) + 1):
            ok = _key("OFR", o)
            covered = rng.sample(sorted(reqs), k=rng.randint(1, min(3, len(reqs))))
            value = 0.0
            for rk in covered:
                units = rng.choice((10, 15, 20)) if ties else rng.randint(5, 25)
                lk = _key("OLN", len(lines) + 1)
                lines[lk] = {"offer_line_id": lk, "offer_id": ok, "requirement_id": rk, "units": units}
                value += units * dict(items)[reqs[rk]["name"]]
            price = round(value * (1.0 if ties else rng.uniform(0.8, 1.2)), -2)
            offers[ok] = {
                "offer_id": ok,
                "vendor": rng.choice(vendors),
                "title": _bundle_title([reqs[rk]["name"] for rk in sorted(covered)]),
                "price": float(price),
                "status": "available",
            }
        policy = {
            "policy_id": "POL-001",
            "name": "Team equipment policy",
            "max_offers_per_vendor": rng.choice((2, 3)),
        }
        return {"policies": {"POL-001": policy}, "requirements": reqs, "offers": offers, "offer_lines": lines}

    def model(self, state: Mapping[str, Any]) -> Milp:
        keys = sorted(state["offers"])
        index = {k: i for i, k in enumerate(keys)}
        rows = []
        for rk, req in sorted(state["requirements"].items()):
            coefs: dict[int, float] = {}
            for ln in state["offer_lines"].values():
                if ln["requirement_id"] == rk:
                    coefs[index[ln["offer_id"]]] = coefs.get(index[ln["offer_id"]], 0.0) + ln["units"]
            rows.append(Row(name=f"coverage:{rk}", coefs=coefs, lower=req["minimum"]))
        cap = next(iter(state["policies"].values()))["max_offers_per_vendor"]
        for vendor in sorted({o["vendor"] for o in state["offers"].values()}):
            rows.append(
                Row(
                    name=f"vendor_cap:{vendor}",
                    coefs={index[k]: 1.0 for k in keys if state["offers"][k]["vendor"] == vendor},
                    upper=cap,
                )
            )
        return Milp(
            sense="min",
            objective=[state["offers"][k]["price"] for k in keys],
            rows=rows,
            binaries=[("offers", k) for k in keys],
        )

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        cap = next(iter(state["policies"].values()))["max_offers_per_vendor"]
        got: dict[str, int] = {}
        per_vendor: dict[str, int] = {}
        picked: list[str] = []
        units = {
            k: {
                ln["requirement_id"]: ln["units"]
                for ln in state["offer_lines"].values()
                if ln["offer_id"] == k
            }
            for k in state["offers"]
        }
        while any(got.get(r, 0) < q["minimum"] for r, q in state["requirements"].items()):

            def gain(k: str) -> float:
                need = sum(
                    min(u, max(0, state["requirements"][r]["minimum"] - got.get(r, 0)))
                    for r, u in units[k].items()
                )
                return need / state["offers"][k]["price"]

            options = [
                k
                for k in sorted(state["offers"])
                if k not in picked and per_vendor.get(state["offers"][k]["vendor"], 0) < cap and gain(k) > 0
            ]
            if not options:
                break
            best = max(options, key=gain)
            picked.append(best)
            per_vendor[state["offers"][best]["vendor"]] = (
                per_vendor.get(state["offers"][best]["vendor"], 0) + 1
            )
            for r, u in units[best].items():
                got[r] = got.get(r, 0) + u
        return {"offers": sorted(picked)}

    phrasings = (
        # 1. the office manager, plainly
        "Our new office needs at least {needs}. "
        "[Vendors only sell fixed bundles, so pick which offers to order so that we cover every quantity at the "
        "lowest total price, staying within our purchasing policy.|Since vendors only sell fixed bundles, choose the "
        "offers to order that cover every quantity at the lowest total price while staying within our purchasing "
        "policy.] "
        "[A few offers were put on order by mistake earlier.|Some offers were put on order by mistake earlier.] "
        "[Make the order list in the system match your choice and tell me the total price."
        "|The order list in the system should match your choice; tell me the total price.]",
        # 2. in a hurry, naming the vendors
        "[Office kit order, needed today: at least {needs}.|Need the office kit ordered today: at least {needs}.] "
        "{vendors} only sell fixed bundles ({n_offers} offers in all), "
        "[so choose whole offers that cover every quantity for the lowest total price, within our purchasing policy."
        "|so cover every quantity with whole offers at the lowest total price, inside our purchasing policy.] "
        "[Some offers went on order by mistake;|A few offers were ordered by mistake;] "
        "make the order list in the system match your choice and [send me|give me] the total price.",
        # 3. a careful planner
        "[I'm preparing the equipment purchase for the new office.|I'm planning the equipment purchase for our new "
        "office.] The minimum quantities are {needs}; "
        "[we may end up with more than that but never less.|more is fine, less is not.] "
        "[The vendors sell only fixed bundles, so the question is which offers to order to cover every quantity at "
        "the lowest total price while staying within our purchasing policy.|As the vendors sell only fixed bundles, "
        "I need the set of offers that covers every quantity at the lowest total price and stays within our "
        "purchasing policy.] "
        "[A few offers were placed on order by mistake earlier.|Earlier, a few offers were placed on order by "
        "mistake.] "
        "Please bring the order list in the system in line with your choice and [report|tell me] the total price.",
        # 4. a note forwarded from the move team
        'From [the office move team|our facilities lead]: "We need at least {needs} for the new office. The vendors '
        'only sell fixed bundles." '
        "[Could you choose the offers to order so every quantity is covered at the lowest total price, within our "
        "purchasing policy?|Can you work out which offers to order to cover every quantity at the lowest total price "
        "without breaking our purchasing policy?] "
        "[Note that a few offers were put on order by mistake earlier, and the order list in the system should match "
        "your choice.|A few offers were put on order by mistake earlier; please make the order list in the system "
        "match your choice.] "
        "Please tell me the total price.",
        # 5. the price question first
        "[What's the lowest total price at which we can get at least {needs} for the new office?"
        "|What's the cheapest total price for at least {needs} for the new office?] "
        "The vendors ({vendors}) only sell fixed bundles, "
        "[and whatever we order has to stay within our purchasing policy."
        "|and every order has to respect our purchasing policy.] "
        "[Some offers were put on order earlier by mistake; update the order list in the system so it matches your "
        "choice,|Some offers are on order by mistake from earlier; make the order list in the system match your "
        "choice,] and tell me the total price.",
        # 6. the policy first
        "Within our purchasing policy, please order bundles for the new office that together give us at least "
        "{needs}. "
        "[Vendors only sell fixed bundles, there are {n_offers} offers on the table, and I'd like the lowest total "
        "price that covers every quantity.|There are {n_offers} offers on the table from {n_vendors_word} vendors, "
        "all sold as fixed bundles, and I'd like the lowest total price that covers every quantity.] "
        "[A few offers were put on order by mistake earlier, so make the order list in the system match your choice."
        "|Make the order list in the system match your choice; a few offers were put on order by mistake earlier.] "
        "[Tell me|Let me know] the total price.",
        # 7. a chat message
        "[Hey|Hi]! For the new office we need at least {needs}. "
        "[The vendors only do fixed bundles, so could you work out which offers to order to cover everything for the "
        "lowest total price, keeping to our purchasing policy?|Vendors only sell fixed bundles; could you pick the "
        "offers that cover everything for the lowest total price while keeping to our purchasing policy?] "
        "[A few offers ended up on order by mistake earlier.|Heads-up: a few offers ended up on order by mistake "
        "earlier.] "
        "Make the order list in the system match your choice and tell me the total price.",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        needs = [f"{r['minimum']} {r['name']}" for _, r in sorted(state["requirements"].items())]
        vendors = sorted({o["vendor"] for o in state["offers"].values()})
        return {
            "needs": listing(needs),
            "vendors": listing(vendors),
            "n_vendors_word": count_word(len(vendors)),
            "n_offers": str(len(state["offers"])),
        }


class Route(Family):
    name = "route_planning"
    title = "Small delivery route"
    taxonomy_id = 20100  # Logistics / Delivery Courier
    class_name = "CourierRoute"
    description = "A courier's day: a depot and drop-off stops, and driving legs between every pair of stops with their minutes."
    sense = "min"
    objective_field = "total_minutes"
    evaluator = staticmethod(evaluators.evaluate_route)
    entities = (
        entity("stop", "stops", "STP", "The depot or a drop-off stop.", [
            attr("name", "str"), attr("address", "str"), attr("is_depot", "bool"),
        ]),
        entity("leg", "legs", "LEG", "Driving from one stop to another.", [
            attr("from_stop", "ref", ref="stop"), attr("to_stop", "ref", ref="stop"), attr("minutes", "int"),
            attr("status", "enum", enum=("unplanned", "planned"), default="unplanned"),
        ]),
    )  # fmt: skip
    decisions = (Decision("leg", "planned", "unplanned", "plan_leg", "unplan_leg",
                          "Put a leg on today's route.", "Take a leg off today's route."),)  # fmt: skip
    contract = InputContract(
        family=name, summary="one round trip from the depot through every stop with the fewest driving minutes",
        fields=_f(("legs.minutes", "driving time of a leg (may differ by direction)", "minutes", "4-60"),
                  ("stops.is_depot", "where the route starts and ends", "flag", "one depot"),
                  ("legs.from_stop/to_stop", "direction of a leg", "pairs", "every ordered pair")),
        feasibility=("a leg exists between every ordered pair of stops",),
        size="5-7 stops, 20-42 legs",
    )  # fmt: skip
    blueprint = Blueprint(
        family=name, sense="min", decisions={"legs": "planned"},
        objective=Trace(id="minutes", role="objective", text="minimize the total driving minutes of planned legs", fields=("legs.minutes",)),
        constraints=(
            Trace(id="degree", role="explicit", text="every stop is entered and left exactly once", fields=("legs.from_stop", "legs.to_stop")),
            Trace(id="one_loop", role="implicit", text="the planned legs form one loop from the depot (no separate sub-loops)", fields=("stops.is_depot", "legs.*")),
        ),
    )  # fmt: skip

    def generate(self, rng: random.Random, *, ties: bool = False) -> State:
        n = rng.randint(5, 7)
        streets = _namer(rng).sample(STREETS, k=n)
        customers = _companies(_namer(rng), n)
        points = {}
        stops = {}
        for i in range(1, n + 1):
            k = _key("STP", i)
            points[k] = (rng.randint(0, 10), rng.randint(0, 10))
            stops[k] = {"stop_id": k, "name": "Depot" if i == 1 else customers[i - 1],
                        "address": f"{rng.randint(1, 400)} {streets[i - 1]}", "is_depot": i == 1}  # fmt: skip
        legs: dict[str, dict[str, Any]] = {}
        for a in sorted(stops):
            for b in sorted(stops):
                if a == b:
                    continue
                dist = math.dist(points[a], points[b])
                minutes = int(round(4 + 4 * dist)) if ties else int(round(4 + 4 * dist + rng.randint(0, 6)))
                k = _key("LEG", len(legs) + 1)
                legs[k] = {
                    "leg_id": k,
                    "from_stop": a,
                    "to_stop": b,
                    "minutes": minutes,
                    "status": "unplanned",
                }
        return {"stops": stops, "legs": legs}

    def model(self, state: Mapping[str, Any]) -> Milp:
        keys = sorted(state["legs"])
        legs = [state["legs"][k] for k in keys]
        stops = sorted(state["stops"])
        depot = next(s for s in stops if state["stops"][s]["is_depot"])
        others = [s for s in stops if s != depot]
        n, nb = len(stops), len(keys)
        u = {s: nb + i for i, s in enumerate(others)}
        rows = []
        for s in stops:
            rows.append(
                Row(
                    name=f"leave:{s}",
                    coefs={i: 1.0 for i, lg in enumerate(legs) if lg["from_stop"] == s},
                    lower=1,
                    upper=1,
                )
            )
            rows.append(
                Row(
                    name=f"enter:{s}",
                    coefs={i: 1.0 for i, lg in enumerate(legs) if lg["to_stop"] == s},
                    lower=1,
                    upper=1,
                )
            )
        for i, lg in enumerate(legs):  # Miller-Tucker-Zemlin ordering forbids loops that skip the depot
            a, b = lg["from_stop"], lg["to_stop"]
            if a != depot and b != depot:
                rows.append(
                    Row(
                        name=f"one_loop:{keys[i]}",
                        coefs={u[a]: 1.0, u[b]: -1.0, i: float(n - 1)},
                        upper=n - 2,
                    )
                )
        return Milp(sense="min", objective=[float(lg["minutes"]) for lg in legs] + [0.0] * len(others), rows=rows,
                    binaries=[("legs", k) for k in keys], aux_bounds=[(1.0, float(n - 1))] * len(others))  # fmt: skip

    def baseline(self, state: Mapping[str, Any]) -> Plan:
        stops = sorted(state["stops"])
        depot = next(s for s in stops if state["stops"][s]["is_depot"])
        by_pair = {(lg["from_stop"], lg["to_stop"]): lg for lg in state["legs"].values()}
        here, left, picked = depot, set(stops) - {depot}, []
        while left:
            nxt = min(sorted(left), key=lambda s: by_pair[(here, s)]["minutes"])
            picked.append(by_pair[(here, nxt)]["leg_id"])
            left.discard(nxt)
            here = nxt
        picked.append(by_pair[(here, depot)]["leg_id"])
        return {"legs": sorted(picked)}

    phrasings = (
        # 1. the driver, plainly
        "[I have to drive from our depot to all {n} drop-off points today and come back."
        "|Today I drive from our depot at {depot} to all {n} drop-off points and come back.] "
        "[Plan the route in the system so that I visit every stop exactly once in one single round trip and spend as "
        "few minutes driving as possible.|Plan the route in the system as one single round trip that visits every "
        "stop exactly once, with as few minutes of driving as possible.] "
        "[Yesterday's legs may still be marked as planned; clear whatever doesn't belong to today's route"
        "|Some of yesterday's legs may still be marked as planned, so clear whatever doesn't belong to today's route] "
        "and [tell me|let me know] the total driving time.",
        # 2. in a hurry, with the addresses
        "[Heading out soon from the depot at {depot}:|Leaving the depot at {depot} shortly:] "
        "{n_word} drop-offs today ({addresses}), and back to the depot at the end. "
        "[One single round trip, every stop exactly once, as little driving time as possible."
        "|Every stop exactly once, one single round trip, the least driving time possible.] "
        "[Yesterday's legs might still be planned in the system, so clear anything that isn't part of today's route, "
        "put today's route in,|Yesterday's legs may still be planned in the system; clear anything that isn't part of "
        "today's route and put today's route in,] and [send me|give me] the total driving time.",
        # 3. a dispatcher planning the van's run
        "[Please plan today's delivery run for the van based at {depot}."
        "|Please plan today's run for the van that leaves from {depot}.] "
        "[The route starts at the depot, visits each of the {n} drop-off points exactly once and returns to the depot "
        "as one single round trip, and it should take as few driving minutes as possible.|It should be one single "
        "round trip from the depot that visits each of the {n} drop-off points ({streets}) exactly once before "
        "returning, with as few driving minutes as possible.] "
        "Some of yesterday's legs may still be marked as planned in the system; clear whatever doesn't belong to "
        "today's route so the system shows only today's plan, and [report|tell me] the total driving time.",
        # 4. a note forwarded from the driver
        "Forwarding from [our driver|the courier on today's run]: \""
        "[I've got {n} drop-offs today on {streets} and need to be back at the depot afterwards."
        "|{n} drop-offs today, on {streets}, and I need to end up back at the depot.] "
        "[Can it be one single round trip that hits every stop exactly once with the fewest minutes behind the wheel?"
        '|Please make it one single round trip, every stop exactly once, with the fewest minutes behind the wheel.]" '
        "[Yesterday's legs may still be marked as planned in the system; clear whatever doesn't belong to today's "
        "route, plan the route there and tell me the total driving time.|Some of yesterday's legs may still show as "
        "planned in the system: clear whatever doesn't belong to today's route, plan the route there, and tell me "
        "the total driving time.]",
        # 5. the time question first
        "[What's the least driving time I can get away with today?|How little time can I spend driving today?] "
        "[I start at the depot, need to reach all {n} drop-off points exactly once and come back, all in one single "
        "round trip.|Starting from the depot at {depot}, I need to reach all {n} drop-off points exactly once and "
        "come back, all in one single round trip.] "
        "[Plan that route in the system; yesterday's legs may still be marked as planned, so clear whatever doesn't "
        "belong to today's route.|Yesterday's legs may still be marked as planned, so clear whatever doesn't belong "
        "to today's route and plan this one in the system.] "
        "[Tell me|Let me know] the total driving time.",
        # 6. the rule first
        "[One single round trip from the depot and back, every drop-off visited exactly once:"
        "|Every drop-off visited exactly once, in one single round trip from the depot and back:] "
        "that's the rule for today's {n} stops[ on {streets}|]. "
        "[Within it, keep the driving minutes as low as possible.|Within that rule, make the driving as short as "
        "possible.] "
        "[The system may still have yesterday's legs marked as planned;"
        "|Yesterday's legs may still be marked as planned in the system;] "
        "clear whatever doesn't belong to today's route, record today's route there, and report the total driving "
        "time.",
        # 7. a chat message
        "[Morning|Hi]! [Could you sort out my route for today?|Can you plan my driving for today?] I've got {n_word} drop-offs ({streets}) and start and "
        "end at the depot on {depot_street}. "
        "[I want one single round trip that visits every stop exactly once, with as little time driving as possible."
        "|One single round trip, please, visiting every stop exactly once with as little time driving as possible.] "
        "[Some of yesterday's legs may still show as planned;|Heads-up: yesterday's legs may still show as planned;] "
        "[clear whatever doesn't belong to today's route, plan it in the system and tell me the total driving time."
        "|please clear whatever doesn't belong to today's route, get today's route into the system, and let me know "
        "the total driving time.]",
    )

    def facts(self, state: Mapping[str, Any]) -> dict[str, str]:
        stops = [state["stops"][k] for k in sorted(state["stops"])]
        depot = next(s for s in stops if s["is_depot"])
        drops = [s for s in stops if not s["is_depot"]]
        return {
            "n": str(len(drops)),
            "n_word": count_word(len(drops)),
            "depot": depot["address"],
            "depot_street": depot["address"].split(" ", 1)[1],
            "addresses": listing([s["address"] for s in drops]),
            "streets": listing([s["address"].split(" ", 1)[1] for s in drops]),
        }


FAMILIES: dict[str, Family] = {
    f.name: f for f in (Knapsack(), Assignment(), Shifts(), Facility(), Procurement(), Route())
}
