"""Values that mean something: the generator an initial state asks first for each attribute.

A world reads as real when its providers have company names, its people have names, e-mails and
phones of one locale, its codes look like the codes of that trade, its amounts sit in plausible
ranges, its dates follow each record's lifecycle and its notes talk about their record. The choice
is made per attribute from the domain's vocabulary (`agentomnia.taxonomy.vocab`) where it has one,
else from the attribute's name, type and entity; Faker supplies people, companies and addresses by
locale. Everything is a function of the `random.Random` given (Faker draws from it too), so the same
spec and seed make the same state in every process and thread. `MISSING` means "no opinion": the
caller falls back to its own value.
"""

from __future__ import annotations

import math
import random
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cache
from typing import Any

from agentomnia.envs.naming import article
from agentomnia.envs.places import city_in, postcode, real_cities
from agentomnia.envs.spec import AttributeSpec, EntitySpec
from agentomnia.envs.values import FIRST, measure_range, number_range, regex_string, written_number
from agentomnia.taxonomy.kinds import kind_values
from agentomnia.taxonomy.vocab import (
    HOLE,
    NAME_ATTRS,
    PLACE_FIELD,
    DomainVocab,
    LinkedGroup,
    VocabEntry,
    borrowed_names,
    borrowed_values,
    free_text,
    vocab_for,
)

MISSING: Any = object()
NOW = datetime(2026, 3, 2, 9, 0)  # the clock's start (state.CLOCK_START): dates spread around it

# Entities whose records are people: the last word of the entity's name is a role a person holds
# (`team_member`, `pet_owner`), or such a role before `account`/`profile` (`owner_account`).
_PERSON_WORDS = (
    "user|customer|employee|patient|member|person|people|individual|staff|staffer|driver|agent|contact|owner"
    "|guest|student|pupil|candidate|applicant|tutor|learner|trainee|intern|apprentice|technician"
    "|technologist|physician|doctor|nurse|clinician|surgeon|dentist|pharmacist|midwife|dietitian|therapist"
    "|psychologist|counsel+or|caregiver|carer|trader|analyst|engineer|architect|advis[eo]r|manager"
    "|participant|prescriber|client|travel+er|passenger|rider|tenant|renter|resident|occupant|volunteer"
    "|coach|trainer|instructor|teacher|professor|lecturer|author|writer|editor|reviewer|recruiter|worker"
    "|stylist|pilot|courier|athlete|player|competitor|contestant|subscriber|donor|investor|lawyer|attorney"
    "|solicitor|paralegal|buyer|seller|bidder|landlord|homeowner|householder|shopper|visitor|attendee"
    "|speaker|artist|performer|musician|photographer|designer|developer|inspector|auditor|accountant"
    "|adjuster|underwriter|appraiser|realtor|citizen|voter|taxpayer|dependent|dependant|wearer|insured"
    "|policyholder|cardholder|holder|shareholder|stockholder|stakeholder|beneficiary|claimant|plaintiff"
    "|defendant|witness|juror|inmate|offender|victim|enrollee|subscriber|borrower|debtor|guarantor|signer"
    "|signatory|respondent|interviewee|mentor|mentee|parent|guardian|child|spouse|relative|kin|retiree"
    "|pensioner|veteran|soldier|officer|firefighter|paramedic|responder|dispatcher|mechanic|electrician"
    "|plumber|installer|cleaner|housekeeper|chef|cook|waiter|bartender|barista|cashier|clerk|receptionist"
    "|assistant|secretary|executive|director|founder|proprietor|researcher|scientist|investigator|scholar"
    "|fellow|graduate|alumnus|veterinarian|vet|farmer|grower|fisher|fisherman|caller|requester|reporter"
    "|recipient|addressee|follower|patron|diner|camper|golfer|runner|cyclist|swimmer|jockey|referee"
    "|umpire|judge|mediator|arbitrator|interpreter|translator|journalist|blogger|influencer|creator"
    "|streamer|gamer|lead|prospect|freelancer|employer_contact|adopter|foster|sitter|walker|groomer|nanny"
    "|lessee|preparer|filer|sender|reader|listener|viewer|captain|sailor|seafarer|mariner|attendant|tour_guide"
    "|actor|dancer|singer|composer|hiker|angler|hunter|breeder|rancher|miner|cadet|recruit"
    "|practitioner|dieter|nutritionist|coachee|new_hire|sales_rep|supporter|fundraiser|fan|proofreader"
    "|operator|specialist|coordinator|supervisor|planner|scheduler|tester|proofer|annotator"
)
PERSON_ENTITY = re.compile(rf"(^|_)({_PERSON_WORDS})(_(account|profile))?$")
# Compounds whose last word is a person's role but whose records are machines or software
_NOT_PERSON = re.compile(
    r"(^|_)(ceiling|exhaust|cooling|desk|case|cpu|box|ventilation|extractor)_fan$"
    r"|(^|_)(network|mobile|telecom|tour|fleet|grid|system|port|terminal|train|rail|bus|transit|satellite)_operator$|"
    r"(^|_)(build|ci|software|ai|llm|monitoring|deploy(ment)?|user|ssh|proxy|sync|backup|update|install)_agent$"
    r"|(^|_)(media|video|audio|music|game)_player$|(^|_)(device|printer|database|db|jdbc|gpu|software)_driver$"
    r"|(^|_)(background|job|queue|celery|task|cloud|build|thread|render|cron|service)_worker$"
    r"|(^|_)(data|log|metrics|garbage)_collector$|(^|_)(test|load|job|ci|github)_runner$"
    r"|(^|_)(company|corporate|business|merchant|vendor|supplier|partner|org|organi[sz]ation)_(account|profile)$"
    r"|(^|_)(event|webhook)_(subscriber|listener)$|(^|_)(secret|token|key|cert)_holder$"
    r"|(^|_)(card|badge|rfid|barcode|qr|nfc|feed|rss|pdf|ebook|smart_card)_reader$|(^|_)(event|message)_listener$"
    r"|(^|_)(ai|voice|virtual|code)_assistant$|(^|_)(api|oauth|http|grpc|rest|sdk|vpn|mqtt)_client$"
)
# Entities that are people only in some domains (an advisory client, an agency contact)
PERSON_ROLE_ATTR = re.compile(
    r"^(owner|assignee|reviewer|requester|reporter|author|tester|head|approver|principal_investigator"
    r"|referring_physician|raised_by|reserved_by|reported_by|created_by|signed_by|contact_person"
    r"|supervisor|manager|coordinator|technician|inspector|owner_pm|recipient|sender|attendee|host_name"
    r"|[a-z_]*_by|[a-z_]*_name_of_person)$"
)
ORG_ATTR = re.compile(
    r"(^|_)(company|employer|organi[sz]ation|vendor|supplier|carrier|manufacturer|brand|publisher|insurer"
    r"|payer|payer_name|bank|merchant|custodian|firm|sponsor|agency|lender|counterparty|operator|broker"
    r"|distributor|landlord_company|airline|maker|(?<!version_)(?<!print_)(?<!shipping_)(?<!size_)label|studio"
    r"|issuer|provider_name|legal_name)($|_name$)"
)  # a record label is a company; a version's or a parcel's label is not
ORG_ENTITY = re.compile(
    r"(^|_)(company|vendor|supplier|carrier|partner|merchant|provider|agency|firm|bank|brand|publisher|lab"
    r"|laboratory|clinic|hospital|school|restaurant|hotel|insurer|payer|manufacturer|consultant|contractor"
    r"|shop|store|airline|studio|sponsor|charity|organization|organisation|practice|pharmacy|corporate_client"
    r"|crm_account|business_account|employer|institution|university|college)$"
)
PLACE_ENTITY = re.compile(
    r"(^|_)(warehouse|site|location|branch|office|depot|facility|venue|room|building|campus|property|unit"
    r"|zone|dock|station|terminal|hub|plant|yard|gate|ward|store_location|region|territory|kitchen|court)$"
)
QUALIFIERS = ["Riverside", "Lakeside", "Northgate", "Westfield", "Oakwood", "Hillcrest", "Brookside", "Kingsway", "Fairview", "Greenfield", "Maplewood", "Harborview", "Eastside", "Southbank", "Bayview", "Pinecrest", "Stonebridge", "Ashford", "Clearwater", "Redwood", "Silverline", "Highland", "Meadowbrook", "Granite", "Bluewater", "Elmhurst", "Crescent", "Windmill", "Foxglove", "Juniper", "Marlow", "Sterling", "Thornbury", "Whitmore", "Ironwood", "Copperfield", "Larkspur", "Bramble", "Kestrel", "Hawthorne"]  # fmt: skip
THEMES = ["Renewal", "Growth", "Launch", "Pilot", "Expansion", "Migration", "Modernization", "Outreach", "Onboarding", "Retention", "Compliance", "Quality", "Safety", "Wellness", "Readiness", "Resilience", "Transition", "Upgrade", "Integration", "Consolidation", "Recovery", "Optimization", "Discovery", "Partnership", "Community", "Excellence", "Efficiency", "Innovation", "Heritage", "Horizon"]  # fmt: skip
VARIANT_WORDS = ["Plus", "Select", "Premier", "Express", "Classic", "Prime", "Pro", "Lite", "Max", "Elite", "Essentials", "Signature", "Advantage", "Standard", "Deluxe", "Core", "Flex", "Reserve", "Compact", "Ultra"]  # fmt: skip
_DEPARTMENTS = ["Finance", "Operations", "Human Resources", "Engineering", "Sales", "Marketing", "Customer Support", "Legal", "Procurement", "IT Services", "Facilities", "Quality Assurance", "Research", "Logistics", "Compliance"]  # fmt: skip
_TEAMS = ["Platform", "Payments", "Checkout", "Search", "Data Infrastructure", "Mobile", "Identity", "Growth", "Billing", "Observability", "Core Services", "Developer Experience", "Security", "Fulfilment", "Analytics"]  # fmt: skip
_INDUSTRIES = ["Manufacturing", "Healthcare", "Retail", "Logistics", "Software", "Construction", "Hospitality", "Financial Services", "Energy", "Agriculture", "Education", "Telecommunications", "Real Estate", "Media", "Automotive"]  # fmt: skip
# Flashcards of a language course: the term and what it means, kept together on one card.
_CARDS = [("la cuenta", "the bill"), ("el tren", "the train"), ("la biblioteca", "the library"), ("el mercado", "the market"), ("la llave", "the key"), ("el aeropuerto", "the airport"), ("la farmacia", "the pharmacy"), ("el desayuno", "breakfast"), ("la cena", "dinner"), ("el billete", "the ticket"), ("la playa", "the beach"), ("el hermano", "the brother"), ("la semana", "the week"), ("mañana", "tomorrow"), ("ayer", "yesterday"), ("barato", "cheap"), ("caro", "expensive"), ("la ventana", "the window"), ("el trabajo", "work"), ("la ciudad", "the city"), ("el coche", "the car"), ("la calle", "the street"), ("el médico", "the doctor"), ("la lluvia", "the rain"), ("el vaso", "the glass"), ("la cuchara", "the spoon"), ("el cumpleaños", "the birthday"), ("despacio", "slowly"), ("siempre", "always"), ("el reloj", "the watch")]  # fmt: skip
_CARD_ENTITY = re.compile(
    r"(^|_)((flash|review_|study_)?cards?|vocab\w*|glossar(y|ies)|lexicons?|words?|phrases?)(_|$)"
)
_CARD_TERM = re.compile(r"^(term|word|front|phrase|expression|prompt)$")
_CARD_MEANING = re.compile(r"^(translation|meaning|back|definition|gloss|answer)$")
_PANELS = ["Complete blood count", "Basic metabolic panel", "Comprehensive metabolic panel", "Lipid panel", "Liver function panel", "Thyroid panel", "Renal function panel", "Coagulation panel", "Iron studies", "HbA1c", "Electrolyte panel", "Urinalysis", "Vitamin D", "Hepatitis panel"]  # fmt: skip
_SERIES = ["The Harbour Detectives", "Northern Skies", "Kitchen Nights", "The Long Road North", "Glass City", "Winter Orchard", "The Quiet Coast", "The Cartographer's Daughter", "Signal Lost", "Midnight Market", "The Archivists", "Red Mountain Chronicles", "Saltwater", "The Last Lighthouse", "Paper Moons", "Small Hours"]  # fmt: skip
# What a field holds where the record's kind decides it: (entity pattern, field pattern, values).
_BY_ENTITY: list[tuple[re.Pattern[str], re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"prescri|medication|dispens|pharma|treatment|patient"), re.compile(r"^(medication|medicine|drug|drug_name)$"),
     ("Amoxicillin", "Atorvastatin", "Metformin", "Lisinopril", "Omeprazole", "Amlodipine", "Levothyroxine", "Sertraline", "Ibuprofen", "Paracetamol", "Salbutamol inhaler", "Prednisolone", "Cetirizine", "Losartan", "Doxycycline", "Insulin glargine")),
    (re.compile(r"prescri|medication|dispens|pharma|dose|treatment"), re.compile(r"^(dose|dosage|strength)$"),
     ("500 mg", "250 mg", "20 mg", "10 mg", "5 mg", "40 mg", "1 g", "2 puffs", "5 ml", "100 mcg", "850 mg", "75 mg")),
    (re.compile(r"prescri|medication|dispens|pharma"), re.compile(r"^(sig|directions|dosing_instructions)$"),
     ("Take 1 tablet by mouth twice daily", "Take 1 capsule three times a day with food", "Take 1 tablet at night", "Inhale 2 puffs when needed, up to 4 times a day", "Take 2 tablets every 6 hours as needed for pain", "Take 1 tablet each morning before breakfast", "Apply a thin layer twice daily")),
    (re.compile(r"job|render|export|build|sync|import|run|task|transfer|upload|edit"), re.compile(r"^(error|error_message|failure_reason|last_error)$"),
     ("Timed out after 600 seconds", "Source file not found", "Not enough disk space on the output volume", "Codec not supported: ProRes RAW", "Permission denied writing to the shared folder", "Connection reset by the remote host", "Checksum mismatch on chunk 14", "Out of memory while encoding")),
    (re.compile(r"expense|reimburse|claim|receipt|trip|purchase"), re.compile(r"^(purpose|business_purpose|reason_for_expense)$"),
     ("Client dinner", "Conference travel", "Team offsite lunch", "Software subscription", "Office supplies", "Training course fee", "Taxi to client site", "Hotel for sales visit", "Trade show booth")),
    (re.compile(r"plant|crop|seed|garden|bed|harvest"), re.compile(r"^(variety|cultivar)$"),
     ("Cherokee Purple", "San Marzano", "Kennebec", "Little Gem", "Detroit Dark Red", "Nantes", "Early Girl", "Sugar Snap", "Bright Lights", "Lacinato", "Sungold", "Charlotte")),
    (re.compile(r"(^|_)(automation|routine|scene|smart_rule)s?$"), re.compile(r"^(name|title|label)$"),
     ("Porch light at sunset", "Good morning", "Away mode when everyone leaves", "Night lock-up", "Heating off when windows open", "Movie time", "Water the garden at dawn", "Leak alert to phone", "Bedtime dim lights", "Arrive home")),
    (re.compile(r"^(utility_|energy_|smart_|sub_)?meters?$"), re.compile(r"^(name|label)$"),
     ("Main electricity meter", "Kitchen water meter", "Gas meter", "Garage sub-meter", "Solar generation meter", "Heat pump sub-meter", "Basement water meter", "EV charger meter")),
    (re.compile(r"^(plan|tier|subscription_plan|membership_plan|pricing_plan|service_plan)s?$"), re.compile(r"^(name|title|label)$"),
     ("Basic", "Standard", "Premium", "Family", "Pro", "Starter", "Business", "Student", "Annual Plus", "Team")),
    (re.compile(r"^(section|class_section|course_section)s?$"), re.compile(r"^(name|label|title)$"),
     tuple(f"Section {c}" for c in "ABCDEFGH")),
    (re.compile(r"lab|test|result|specimen|sample|blood|patholog"), re.compile(r"^(lab_|test_)?panel(_name)?$"),
     tuple(_PANELS)),
    (re.compile(r"title|book|show|episode|film|movie|podcast|comic|novel|season|volume"),
     re.compile(r"^series(_name|_title)?$"), tuple(_SERIES)),
    (re.compile(r"aircraft|plane|fleet|airframe"), re.compile(r"^(fleet_type|aircraft_type|type_code|model)$"),
     ("A320neo", "A321neo", "B737-800", "B737 MAX 8", "E190", "A350-900", "B787-9", "ATR 72-600", "Dash 8-400", "A220-300")),
]  # fmt: skip
_FOLDERS = ["Contracts", "Invoices", "Reports", "Correspondence", "Archive", "Onboarding", "Legal", "Board Minutes", "Quarterly Reviews", "Receipts", "Drafts", "Shared/Finance"]  # fmt: skip
_UNITS = ["each", "box", "case", "kg", "litre", "pack", "pallet", "hour", "metre", "dozen"]
_ALLERGIES = ("Penicillin", "Peanuts", "Latex", "Sulfa drugs", "Shellfish", "No known drug allergies", "Ibuprofen", "Bee stings", "Codeine", "Tree nuts")  # fmt: skip
_MEDICATIONS = ("Metformin 500 mg twice daily", "Lisinopril 10 mg daily", "Atorvastatin 20 mg at night", "Levothyroxine 50 mcg daily", "Amlodipine 5 mg daily", "Omeprazole 20 mg daily", "Albuterol inhaler as needed", "Sertraline 50 mg daily", "Ibuprofen 400 mg as needed", "Insulin glargine 20 units at night")  # fmt: skip
_WEATHER = ["Sunny, light wind", "Overcast", "Light rain", "Heavy rain, site paused", "Clear and cold", "Hot and humid", "Fog until mid-morning", "Gusty wind", "Snow showers", "Partly cloudy"]  # fmt: skip
_CURRENCY = {"en_US": "USD", "en_GB": "GBP", "ja_JP": "JPY", "en_CA": "CAD", "en_AU": "AUD", "de_CH": "CHF", "zh_CN": "CNY", "ko_KR": "KRW", "en_IN": "INR", "pt_BR": "BRL", "es_MX": "MXN"}  # fmt: skip
# Roughly what one US dollar buys in each currency (amounts are drawn on a dollar's scale), and the
# currencies written without minor units.
UNITS_PER_USD = {"JPY": 150.0, "KRW": 1350.0, "INR": 83.0, "CNY": 7.2, "HKD": 7.8, "MXN": 17.0, "BRL": 5.0,
                 "ZAR": 18.0, "SEK": 10.5, "NOK": 10.5, "DKK": 6.9, "PLN": 4.0, "TRY": 32.0, "IDR": 15600.0,
                 "THB": 36.0, "PHP": 56.0, "TWD": 32.0, "CZK": 23.0, "HUF": 360.0, "VND": 24500.0,
                 "CLP": 930.0, "COP": 3900.0, "ARS": 870.0, "NGN": 1400.0, "EGP": 48.0}  # fmt: skip
WHOLE_UNITS = frozenset({"JPY", "KRW", "IDR", "VND", "CLP", "HUF", "TWD", "COP"})
_SYMBOL = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "CAD": "CA$", "AUD": "A$", "INR": "₹", "CNY": "¥"}
_AIRLINES = ["AA", "DL", "UA", "BA", "LH", "AF", "KL", "EK", "QR", "SQ", "NH", "JL", "AC", "IB", "TP"]
_FAMILY_FIRST = ("ja_JP", "zh_CN", "zh_TW", "ko_KR", "hu_HU")


# ---------------------------------------------------------------- Faker, per thread and locale


_local = threading.local()
_pool_lock = threading.Lock()


def faker(locale: str, rng: random.Random) -> Any:
    """This thread's Faker generator for `locale`, drawing from `rng` (no shared random state)."""
    gens: dict[str, Any] = getattr(_local, "gens", None) or {}
    _local.gens = gens
    gen = gens.get(locale)
    if gen is None:
        from faker import Faker
        from faker.config import AVAILABLE_LOCALES

        gen = gens[locale] = Faker(locale if locale in AVAILABLE_LOCALES else "en_US").factories[0]
    gen.random = rng
    return gen


@dataclass(frozen=True)
class Pools:
    """Draws from Faker's locale data made once per process (Faker's own weighted draws are slow):
    first and last names, companies, streets, cities, jobs, title phrases."""

    first: tuple[str, ...]
    last: tuple[str, ...]
    companies: tuple[str, ...]
    streets: tuple[str, ...]
    secondary: tuple[str, ...]
    cities: tuple[str, ...]
    states: tuple[str, ...]
    countries: tuple[str, ...]
    jobs: tuple[str, ...]
    phrases: tuple[str, ...]
    domains: tuple[str, ...] = field(default=())


@cache
def pools(locale: str) -> Pools:
    with _pool_lock:
        gen = faker(locale, random.Random(20260302))
        en = faker("en_US", random.Random(20260302)) if locale != "en_US" else gen

        def draw(fn: Any, n: int) -> tuple[str, ...]:
            return tuple(dict.fromkeys(str(fn()) for _ in range(n)))

        def maybe(name: str, n: int, fallback: Any) -> tuple[str, ...]:
            fn = getattr(gen, name, None)
            try:
                return draw(fn, n) if fn is not None else draw(fallback, n)
            except (AttributeError, TypeError):
                return draw(fallback, n)

        return Pools(
            first=draw(gen.first_name, 400),
            last=draw(gen.last_name, 400),
            companies=draw(gen.company, 300),
            streets=draw(gen.street_address, 300),
            secondary=maybe("secondary_address", 60, lambda: f"Suite {gen.random.randint(100, 900)}"),
            # real cities where Faker makes them up ("West Davidmouth"): a city has its state (`places`)
            cities=tuple(c.name for c in real_cities(locale)) or draw(gen.city, 200),
            states=tuple(dict.fromkeys(c.region for c in real_cities(locale)))
            or maybe("state", 120, gen.city),
            countries=draw(en.country, 120),
            jobs=draw(gen.job, 200),
            phrases=draw(lambda: en.bs().capitalize(), 300),
            domains=draw(en.free_email_domain, 20),
        )


# ---------------------------------------------------------------- the world a state is made in


@dataclass
class World:
    """What generating one state shares: the domain's vocabulary, its locale, the names given out
    (so two records do not share a name) and the record being made."""

    vocab: DomainVocab | None = None
    locale: str = "en_US"
    used: dict[tuple[str, str], set[Any]] = field(default_factory=dict)
    # the linked row each record being drawn took (with the record, which keeps its id its own), so
    # its other columns come from that same row
    rows_taken: dict[tuple[int, str], tuple[dict[str, Any], tuple[Any, ...]]] = field(default_factory=dict)
    person: tuple[str, str] | None = None  # the current record's own person (first, last)
    distinct: frozenset[tuple[str, str]] = frozenset()  # (entity, attr) a uniqueness rule covers
    # the values the spec's classifying attributes take (a pet's species, a title's genre), by name:
    # what a seed's free-form category or tag is named from
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    domain: int | None = None  # the spec's taxonomy domain: whose vocabularies lend names first
    file_host: str | None = None  # where this world's stored files live (files.<site>), once drawn
    # (record, attribute, sentence, entity, label lookup) of each free text written from its record's
    # fields: later passes move dates and amounts, and `retell` writes the sentence again from them
    told: list[tuple[dict[str, Any], str, str, EntitySpec, Any]] = field(default_factory=list)

    @classmethod
    def for_spec(
        cls,
        domain_id: int | None,
        entities: tuple[EntitySpec, ...],
        distinct: frozenset[tuple[str, str]] = frozenset(),
    ) -> World:
        """The world of a spec: its domain's vocabulary applies to the entities the domain contributed;
        `distinct` names the attributes a uniqueness rule keeps apart (they are handed out once)."""
        vocab = vocab_for(domain_id) if domain_id is not None else None
        if vocab is not None:
            kb = {e.name for e in entities if e.source in ("kb", "merged")}
            vocab = DomainVocab(
                id=vocab.id,
                locale=vocab.locale,
                values={k: v for k, v in vocab.values.items() if k in kb},
                linked={k: v for k, v in vocab.linked.items() if k in kb},
            )
        classes: dict[str, tuple[str, ...]] = {}
        for e in entities:
            for a in e.attributes:
                if not _CLASSIFIER.search(a.name):
                    continue
                listed = vocab.entry(e.name, a.name) if vocab is not None else None
                values = a.enum or (listed.values if listed is not None and listed.kind == "list" else ())
                named = tuple(str(v) for v in values if isinstance(v, str) and v.strip())
                if named:
                    classes[a.name] = tuple(dict.fromkeys((*classes.get(a.name, ()), *named)))
        return cls(
            vocab=vocab, locale=vocab.locale if vocab is not None else "en_US", distinct=distinct,
            classes=classes, domain=domain_id,
        )  # fmt: skip

    def entry(self, entity: str, attr: str) -> VocabEntry | None:
        """The domain's own entry, else (for what a record is called) the name list a related
        domain's vocabulary gives an entity so named: a seed's `project` is named as projects are."""
        own = self.vocab.entry(entity, attr) if self.vocab is not None else None
        return own if own is not None else borrowed_names(entity, attr, self.domain)


def has_proper_name(entity: str) -> bool:
    """Whether records of an entity so named are called by a name of their own: people, organisations
    and places (a `vendor`, a `clinic`, a `user`), not events or entries (a `visit`, a `hold`)."""
    return bool(person_entity(entity) or ORG_ENTITY.search(entity) or PLACE_ENTITY.search(entity))


def is_person(entity: EntitySpec) -> bool:
    return person_entity(entity.name)


@cache
def person_entity(name: str) -> bool:
    """Whether records of an entity so named are people (a citizen, a dependent, an owner's account),
    not things or organisations (a vessel, a clinic, a company's account, a media player)."""
    return PERSON_ENTITY.search(name) is not None and _NOT_PERSON.search(name) is None


def is_free_text(attr: AttributeSpec) -> bool:
    return _free_text(attr.type, attr.name)


@cache
def _free_text(type_: str, name: str) -> bool:
    return free_text(type_, name)  # an `address` typed text is still an address


def is_derived(attr: AttributeSpec) -> bool:
    """Values that read from the record's other fields: free text, e-mails, user names, web sites,
    the day of the week of the record's date."""
    if attr.type not in ("str", "text"):
        return False
    return (
        is_free_text(attr)
        or re.search(r"e_?mail|user_?name|handle|login|website|homepage", attr.name) is not None
        or re.search(_WEEKDAY, attr.name) is not None
    )


_WEEKDAY = r"(^|_)(day_of_(the_)?week|weekday|dow)$"


def _record_day(record: Mapping[str, Any], name: str) -> date | None:
    """The calendar day of the record's date that a weekday field `name` speaks of: the date sharing
    its prefix (`pickup_weekday` -> `pickup_date`, `pickup_at`), else the record's first date."""
    prefix = re.sub(_WEEKDAY, "", name)
    days: list[tuple[bool, date]] = []
    for field_name, value in record.items():
        if not isinstance(value, str) or not re.match(r"\d{4}-\d\d-\d\d", value):
            continue
        try:
            day = date.fromisoformat(value[:10])
        except ValueError:
            continue
        days.append((bool(prefix) and field_name.startswith(prefix), day))
    return next((d for same, d in days if same), days[0][1] if days else None)


NAMING = frozenset(
    {"name", "title", "full_name", "display_name", "legal_name", "hostname", "handle", "username", "label"}
)


def naming_attr(attr: AttributeSpec, entity: EntitySpec) -> bool:
    """An attribute that names its record, so two records should not share it: a name, title, label
    or display name (`EntitySpec.label_attribute` when it is one of those, not its fallback to the
    first str field). A venue, currency, unit or authority is shared by many records and is not one."""
    return attr.name in NAMING and attr.type in ("str", "text")


def kept_apart(attr: AttributeSpec, entity: EntitySpec, world: World) -> bool:
    """Values two records may not share: names of records, and what a uniqueness rule covers alone."""
    return naming_attr(attr, entity) or (entity.name, attr.name) in world.distinct


# ---------------------------------------------------------------- numbers


def _round(x: float, decimals: int) -> float:
    return round(x, decimals)


# The state checker (`state._value_problem`) still holds every money value to 0 or more, so a
# vocabulary's negative money range (a credit, an adjustment) is drawn from its part at or above 0.
MONEY_MAY_BE_NEGATIVE = False


def money_floor(attr: AttributeSpec, value: Any) -> Any:
    if attr.type == "money" and not MONEY_MAY_BE_NEGATIVE and isinstance(value, (int, float)) and value < 0:
        return type(value)(0)
    return value


def from_range(entry: VocabEntry, attr: AttributeSpec, rng: random.Random) -> int | float:
    lo, hi = entry.min, entry.max
    if attr.type == "money" and not MONEY_MAY_BE_NEGATIVE and lo < 0:
        lo = min(0.0, hi) if hi >= 0 else lo
    if attr.type == "int":
        return rng.randint(math.ceil(lo), max(math.ceil(lo), math.floor(hi)))
    decimals = entry.decimals if entry.decimals is not None else 2
    v = _round(rng.uniform(lo, hi), decimals)
    return money_floor(attr, int(v) if decimals == 0 else v)


def number_for(attr: AttributeSpec, rng: random.Random, entity: str = "") -> Any:
    """A plausible number by the attribute's name, and where the scale depends on it by its entity's
    (a visit's temperature is a body's) (MISSING: the caller's own heuristics)."""
    found = measure_range(attr.name, entity) if entity else None
    found = found or number_range(attr.name)
    if found is not None:
        lo, hi, dec = found
        if attr.type == "int":
            return rng.randint(math.ceil(lo), max(math.ceil(lo), math.floor(hi)))
        if attr.type == "money":
            lo = max(lo, 0)
        v = _round(rng.uniform(lo, hi), dec)
        return float(v) if dec else float(int(v))
    return MISSING


# ---------------------------------------------------------------- dates and lifecycles

_BIRTH = re.compile(r"birth|dob|born")
_PHASES: list[tuple[int, re.Pattern[str]]] = [
    (4, re.compile(r"due|expir|valid_until|valid_to|_after$|deadline|renewal|renews_|maturity|next_|expected|target|_by$|until|(^|_)et[ar]($|_)|estimat")),
    (3, re.compile(r"closed|complet|resolved|ended|(^|_)end|finish|deliver|paid|shipped|returned|cancel|approved|decided|settled|dispensed|filled|fulfil|check_?out|arriv|dropoff|published|released|terminated|discharged|merged|done|restor|repaired|recovered|archived|retired|withdrawn|(^|_)actual_(date|on|at|time)$|go_?live|cutover|harvest")),
    (2, re.compile(r"updated|modified|(^|_)last_|changed|reviewed|edited|acknowledged")),
    (1, re.compile(r"(^|_)(invoice|bill|order|statement|posting|transaction|issue)_date$|created|opened|submitted|requested|issued|registered|joined|hired|enrolled|signed|placed|ordered|booked|start|begin|(^|_)from|effective|check_?in|depart|pickup|reported|raised|logged|received|detected|occurred|onboarded|launched|(^|_)since|dispatched|assigned|admitted|kick_?off|planted|sown")),
]  # fmt: skip
_PAST = re.compile(
    r"created|opened|submitted|requested|issued|registered|joined|hired|enrolled|signed|placed|ordered|reported|raised|logged|received|detected|occurred|onboarded|(^|_)last_|updated|modified"
)


@cache
def _is_birth(name: str) -> bool:
    return _BIRTH.search(name) is not None


@cache
def phase(name: str) -> int:
    """Where a date sits in its record's life: 1 start, 2 update, 3 end, 4 due (0: unordered)."""
    return next((p for p, rx in _PHASES if rx.search(name)), 0)


@cache
def _date_span(name: str) -> tuple[int, int]:
    return (-240, -1) if _PAST.search(name) else (-60, 150) if phase(name) == 4 else (-240, 120)


_YOUNG = re.compile(r"(^|_)(child|children|kid|infant|toddler|pupil|baby|babies)s?$")


def _life_span(entity: EntitySpec) -> tuple[int, int]:
    """Ages in whole years a record's birth date gives: an animal's (a patient with a species or a
    breed is a clinic's pet, not a person of 60), a child's, an adult's, else a thing's."""
    if any(a.name in ("species", "breed") for a in entity.attributes):
        return 0, 14
    if _YOUNG.search(entity.name):
        return 1, 11
    if any(a.name in ("grade_level", "school_grade", "year_group") for a in entity.attributes):
        return 5, 17  # a pupil: a student in grade 9 was not born in 1979
    return (18, 84) if is_person(entity) else (1, 15)


def date_for(attr: AttributeSpec, entity: EntitySpec, rng: random.Random) -> str:
    n = attr.name
    if _is_birth(n):
        years = rng.randint(*_life_span(entity))
        day = NOW.date() - timedelta(days=365 * years + rng.randint(0, 364))
        return day.isoformat() if attr.type == "date" else datetime.combine(day, NOW.time()).isoformat()
    lo, hi = _date_span(n)
    moment = NOW + timedelta(days=rng.randint(lo, hi), minutes=15 * rng.randint(-12, 36))
    return moment.date().isoformat() if attr.type == "date" else moment.isoformat(timespec="seconds")


_PLANNED = re.compile(
    r"schedul|planned|appointment|(^|_)(event|visit|travel|departure|arrival|delivery)_(date|on|at)$|_for$"
)


def timely_date(attr: AttributeSpec, rng: random.Random, entity: EntitySpec | None = None) -> str:
    """A date a person gives for a record made or changed now, at the clock (`NOW`): when it was
    issued or logged is today or just before, when it starts is soon, when it ends after that, when it
    is due or expires later still; a birth date is as `date_for` makes it."""
    n = attr.name
    if _is_birth(n):
        return date_for(attr, entity or _stub("person"), rng)
    p = phase(n)
    if _PAST.search(n) or has_happened(n):  # a payment paid, a round returned: by now, not next month
        low, high = -3 * 24 * 4, 0  # in quarter hours
    elif p == 1 or _PLANNED.search(n):
        low, high = 4, 14 * 24 * 4
    elif p == 3:
        low, high = 15 * 24 * 4, 45 * 24 * 4
    elif p == 4:
        low, high = 30 * 24 * 4, 120 * 24 * 4
    else:
        low, high = -30 * 24 * 4, 0
    moment = NOW + timedelta(minutes=15 * rng.randint(low, high))
    if attr.type == "date":
        return moment.date().isoformat()
    # a time of the working day (registered at 10:15, not 04:15), never after the clock for the past
    moment = moment.replace(hour=rng.randint(8, 17), minute=15 * rng.randint(0, 3), second=0)
    if high <= 0 and moment > NOW:
        moment -= timedelta(days=1)
    return moment.isoformat(timespec="seconds")


def before_clock(name: str, value: str, rng: random.Random) -> str:
    """A date of something that has happened (`logged_at`, `created_on`) moved before the clock when
    it lies after it, in the form it was written; any other value as it is."""
    moment = moment_of(value)
    if moment is None or not _PAST.search(name) or moment <= NOW:
        return value
    return _as(value, NOW - timedelta(days=rng.randint(1, 60), minutes=15 * rng.randint(0, 40)))


def moment_of(value: Any) -> datetime | None:
    """The moment an ISO date or datetime `value` holds, without its zone; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        m = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return m.replace(tzinfo=None)


def _as(value: str, moment: datetime) -> str:
    """`moment` written the way `value` is written (a date, a datetime, with a trailing Z)."""
    if len(value) == 10:
        return moment.date().isoformat()
    text = moment.isoformat(timespec="seconds")
    return text + "Z" if value.endswith("Z") else text


def order_lifecycle(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """Dates of one record in lifecycle order: created <= updated <= closed, ends after starts, due
    and expiry dates after the record was issued or started. A date a seed declares is moved too
    (it keeps its form, so its `format` still holds), unless a pattern, enum or const pins it."""
    dated = [
        (phase(n), n, m)
        for n in movable_dates(entity)
        if not _BIRTH.search(n) and (m := moment_of(record.get(n))) is not None
    ]
    ordered = sorted([d for d in dated if d[0] in (1, 2, 3)], key=lambda d: (d[0], d[1]))
    moments = sorted(m for p, _, m in ordered)
    previous: datetime | None = None
    for (p, name, _), moment in zip(ordered, moments, strict=True):
        timed = "T" in str(record[name])
        if previous is not None and moment - previous > (_TIMED_STEP if timed else _DATED_STEP):
            # a step of a record's life follows the one before within hours (a crew arrives the
            # day it is dispatched) or, for plain dates, weeks; not months later
            moment = previous + (
                timedelta(minutes=15 * rng.randint(1, 4 * 72))
                if timed
                else timedelta(days=rng.randint(0, 30))
            )
        if previous is not None and p == 3 and moment.date() <= previous.date() and not timed:
            moment = previous + timedelta(days=rng.randint(1, 14))  # an end falls after its start
        record[name] = _as(record[name], moment)
        previous = moment
    # due dates count from the latest start (a ticket created, then its work started)
    starts = [m for p, n, _ in ordered if p == 1 and (m := moment_of(record[n])) is not None]
    start = max(starts) if starts else None
    for p, name, m in dated:
        timed = "T" in str(record[name])
        if p != 4 or start is None or _validity(entity, name) is not None:
            continue  # an expiry of a known kind runs as long as that kind does (below)
        if m <= start or m - start > (_TIMED_STEP if timed else _DUE_STEP):
            # due after the start, and not out of sight: an ETA within two days, a due date a season
            ahead = (
                timedelta(minutes=15 * rng.randint(2, 4 * 48))
                if timed
                else timedelta(days=rng.randint(7, 90))
            )
            record[name] = _as(record[name], start + ahead)

    _valid_for_its_kind(entity, record, rng)
    _runs_its_term(entity, record, rng)
    for name, value in on_its_day(entity, record, record).items():
        record[name] = value


# what people keep to their waking day: an interview, a lesson, a booked room, a visit (not a shift, a
# flight or a charging session, which run round the clock); its times of day, not the system's own
# stamps of when the record was made, changed or sent
_KEPT_BY_DAY = re.compile(
    r"appointment|interview|lesson|(^|_)class(es)?($|_)|meeting|booking|reservation|visit|consult|"
    r"(^|_)tours?($|_)|exam|viewing|showing|fitting|lecture|seminar|webinar|workshop|tutor|therap|"
    r"(^|_)sessions?($|_)|(^|_)slots?($|_)|rehearsal|audition|tasting|screening|orientation"
)
_ROUND_THE_CLOCK = re.compile(
    r"shift|on_call|charging|flight|sleep|night|overnight|monitor|stream|alarm|log|alert|sensor|"
    r"reading|telemetry|backup|(^|_)jobs?($|_)|(^|_)runs?($|_)|trip|journey|transfer|ride"
)
_STAMP = re.compile(
    r"creat|updat|modif|logged|recorded|sent|received|submitted|cancel|paid|import|sync|notif"
)
WAKING_HOURS = (7, 22)  # a time of day from 07:00 to before 22:00


def kept_by_day(entity: EntitySpec) -> bool:
    """Whether `entity`'s records are things people do in their waking day (`_KEPT_BY_DAY`)."""
    return bool(_KEPT_BY_DAY.search(entity.name)) and not _ROUND_THE_CLOCK.search(entity.name)


def day_times(entity: EntitySpec) -> list[str]:
    """The date-time fields of a record kept by day that say when it happens (`starts_at`, `held_at`,
    `end_at`), not when the record was made or changed."""
    if not kept_by_day(entity):
        return []
    dated = {a.name for a in entity.attributes if a.type == "datetime"}
    return [n for n in movable_dates(entity) if n in dated and not _STAMP.search(n) and not _is_birth(n)]


# kept by day and over within hours (not a stay, a booked pitch or a tour of days)
_WITHIN_HOURS = re.compile(
    r"appointment|interview|lesson|(^|_)class(es)?($|_)|meeting|consult|exam|lecture|seminar|webinar|"
    r"workshop|tutor|therap|(^|_)sessions?($|_)|(^|_)slots?($|_)|viewing|showing|fitting|rehearsal|"
    r"audition|tasting|screening|orientation"
)
# the event's own start and end; not a window it is open, valid or on offer for (`available_from`)
_START_WORD = re.compile(r"(^|_)(start|starts|started|begin|begins|began)(?=_|$)")
_END_WORD = re.compile(r"(^|_)(end|ends|ended|finish|finishes|finished)(?=_|$)")


def start_end_pairs(entity: EntitySpec) -> list[tuple[str, str]]:
    """(start, end) of the times a record kept by day over within hours names in pairs (`start_at`
    and `end_at`, `window_start` and `window_end`): the same name with the one word changed."""
    if not (day_times(entity) and _WITHIN_HOURS.search(entity.name)):
        return []
    names = day_times(entity)
    ends = {_END_WORD.sub(r"\1#", n): n for n in names if _END_WORD.search(n)}
    return [(n, ends[key]) for n in names if (key := _START_WORD.sub(r"\1#", n)) != n and key in ends]


def within_hours(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """An appointment from 09:00 to 09:15 the next day ends the day it starts: an end more than 12
    hours after its start (or before it) moves to 30 minutes to 3 hours after it, by 21:45."""
    for start, end in start_end_pairs(entity):
        if over_within_hours(record, start, end) is not False:
            continue
        begins = moment_of(record[start])
        assert begins is not None
        moved = begins + timedelta(minutes=15 * rng.randint(2, 12))
        latest = begins.replace(hour=WAKING_HOURS[1] - 1, minute=45, second=0)
        record[end] = _as(str(record[end]), min(moved, latest) if latest > begins else begins + _QUARTER)


_SAME_DAY = timedelta(hours=12)
_QUARTER = timedelta(minutes=15)


def over_within_hours(record: Mapping[str, Any], start: str, end: str) -> bool | None:
    """Whether a record's `end` time comes after its `start` time, by at most 12 hours; None where
    either is not a time of day."""
    begins, ends = moment_of(record.get(start)), moment_of(record.get(end))
    if begins is None or ends is None or "T" not in str(record[start]) or "T" not in str(record[end]):
        return None
    return timedelta(0) < ends - begins <= _SAME_DAY


def at_night(moment: datetime) -> bool:
    return not WAKING_HOURS[0] <= moment.hour < WAKING_HOURS[1]


def into_the_day(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """An interview at 03:30 or a lesson at 23:15 moves into the day: the record's times move together
    (its length kept) so its first falls between 08:00 and 17:45 of its date; a time still at night
    after that (a stay's last day) moves into the day too, never before the time before it."""
    times = sorted(
        (m, n)
        for n in day_times(entity)
        if "T" in str(record.get(n)) and (m := moment_of(record[n])) is not None
    )
    if not any(at_night(m) for m, _ in times):
        return
    first = times[0][0]
    delta = first.replace(hour=rng.randint(8, 17), minute=15 * rng.randint(0, 3), second=0) - first
    previous: datetime | None = None
    for moment, name in times:
        moved = moment + delta
        if at_night(moved):
            hour = 21 if moved.hour >= WAKING_HOURS[1] else WAKING_HOURS[0] + rng.randint(1, 2)
            moved = moved.replace(hour=hour, minute=15 * rng.randint(0, 3), second=0)
        if previous is not None and moved < previous:
            moved = previous + timedelta(minutes=15 * rng.randint(1, 4))
        record[name] = _as(str(record[name]), moved)
        previous = moved


# the day a record is about (`shoot_date` of a shoot day, `visit_date`, `event_day`), and the times of
# day a record names for it (`call_time`, `arrival_time`): the times fall on that day
_DAY = re.compile(r"^(?:[a-z0-9]+_)*(date|day)$")
_NOT_THE_DAY = re.compile(
    r"due|birth|dob|expir|creat|updat|modif|deadline|start|end|valid|renew|next|last|review|clos|open|"
    r"regist|sign|join|hire|releas|publish|effective|issue|paid|billing|invoice|statement|report"
)
_TIME_OF_DAY = re.compile(r"^[a-z0-9_]+_time$")


def on_its_day(entity: EntitySpec, given: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, str]:
    """Where a record has one day it is about and times of day named for it (a shoot day's
    `shoot_date` and `call_time`), the times it is `given` moved onto that day at their own times of
    day (a call time of February 22 for a shoot on February 21 moves to February 21), or,
    where the day is what is given and the times are the record's, the day moved onto the times'.
    Only the fields that move are returned, each written the way it was written."""
    merged = {**record, **given}
    found = its_day(entity, merged)
    if found is None:
        return {}
    name, day, times = found
    if all(m.date() == day.date() for _, m in times):
        return {}
    if name in given and not any(n in given for n, _ in times):
        return {name: _as(str(merged[name]), min(m for _, m in times))}
    # each time of day on the day; a start's before an end's (a start at 4 PM and an end at 9 AM swap)
    on_day = {n: datetime.combine(day.date(), m.time()) for n, m in times}
    starts = [n for n in on_day if phase(n) == 1]
    ends = [n for n in on_day if phase(n) == 3]
    if len(starts) == 1 and len(ends) == 1 and on_day[ends[0]] < on_day[starts[0]]:
        on_day[starts[0]], on_day[ends[0]] = on_day[ends[0]], on_day[starts[0]]
    return {n: _as(str(merged[n]), m) for n, m in on_day.items() if n in given and m != moment_of(merged[n])}


def its_day(
    entity: EntitySpec, record: Mapping[str, Any]
) -> tuple[str, datetime, list[tuple[str, datetime]]] | None:
    """(field, day) of the one day `record` is about and (field, moment) of its times of day, where it
    has both (`on_its_day`); None otherwise."""
    days = [
        a.name
        for a in entity.attributes
        if _DAY.match(a.name) and not _NOT_THE_DAY.search(a.name) and len(str(record.get(a.name) or "")) == 10
    ]
    times = [
        (n, m) for a in entity.attributes
        if _TIME_OF_DAY.match(n := a.name) and "T" in str(record.get(n) or "") and (m := moment_of(record[n]))
    ]  # fmt: skip
    day = moment_of(record.get(days[0])) if len(days) == 1 else None
    return (days[0], day, times) if day is not None and times else None


# how long a thing stays valid once it is issued or given, in days, by what it is: a passport for five
# to ten years, a vaccination one to three, a job posting some weeks (a passport issued in February that
# expires in March, or a vaccination that runs out the next day, is no such thing)
_VALID_FOR: list[tuple[re.Pattern[str], tuple[int, int]]] = [
    (re.compile(r"passport|identity_(doc|card)|id_card|national_id|driv(er|ing)_?licen"), (5 * 365, 10 * 365)),
    (re.compile(r"visa(s|_|$)"), (90, 2 * 365)),
    (re.compile(r"vaccin|immuni[sz]|booster"), (365, 3 * 365)),
    (re.compile(r"warrant"), (365, 5 * 365)),
    (re.compile(r"certif|credential|licen[cs]|authori[sz]ation|accredit|qualification|clearance"), (365, 3 * 365)),
    (re.compile(r"(^|_)(debit_|credit_|bank_|library_|patron_|member(ship)?_|loyalty_)?cards?(_|$)"), (2 * 365, 5 * 365)),
    (re.compile(r"prescription"), (30, 365)),
    (re.compile(r"(job_)?posting|vacanc|advert"), (14, 60)),
]  # fmt: skip
_EXPIRY = re.compile(r"^(?:(.+?)_)?(expir\w*|expires(_on|_at|_date)?|valid_(until|to|thru|through))$")
# when a thing was issued or given: the start its expiry counts from
_ISSUED = re.compile(
    r"issued|administered|(^|_)given|granted|awarded|certified|acquired|purchased|bought|installed|"
    r"in_service|posted|listed|(^|_)valid_from|effective|(^|_)start|received|obtained|passed"
)


def _validity(entity: EntitySpec, expiry: str) -> tuple[str, tuple[int, int]] | None:
    """What an `expiry` field is about (`passport` for `passport_expiry`, '' for a bare `expires_on`)
    and the days it lies after the issue: by what the field names, or else by what the record is (an
    identity document's `expires_on`); None for a field that is no expiry, or a thing this knowledge
    does not cover."""
    m = _EXPIRY.match(expiry)
    if m is None:
        return None
    for subject in (m.group(1), entity.name, entity.table):
        days = next((days for rx, days in _VALID_FOR if subject and rx.search(subject)), None)
        if days is not None:
            return m.group(1) or "", days
    return None


def _valid_for_its_kind(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """An expiry lies as long after the issue as such a thing runs (`_VALID_FOR`). It counts from the
    date the record gives for the issue (`issued_on`, `administered_on`, `in_service_on`), else from
    its start (`created_at`); without either it is not moved. An expiry already in its kind's range
    stays."""
    movable = movable_dates(entity)
    issued = _issue_dates(movable, record)
    if not issued:
        return
    for name in movable:
        valid = _validity(entity, name)
        expiry = moment_of(record.get(name))
        if valid is None or expiry is None:
            continue
        about, (lo, hi) = valid
        # the issue of its own name (`passport_issued_on` for `passport_expiry`), else the latest one
        own = [m for n, m in issued if about and n.startswith(about)]
        start = max(own or [m for _, m in issued])
        if lo <= (expiry - start).days <= hi:
            continue
        record[name] = _as(record[name], start + timedelta(days=rng.randint(lo, hi)))


def _issue_dates(movable: list[str], record: Mapping[str, Any]) -> list[tuple[str, datetime]]:
    """(field, moment) of when a record was issued or given (`_ISSUED`), else of its starts (phase 1)."""
    dated = [(n, m) for n in movable if not _EXPIRY.match(n) and (m := moment_of(record.get(n))) is not None]
    return [(n, m) for n, m in dated if _ISSUED.search(n)] or [(n, m) for n, m in dated if phase(n) == 1]


# what runs for a term: its end comes months or years after its start, not weeks
_TERM_ENTITY = re.compile(
    r"(^|_)(lease|tenanc(y|ie)|contract|subscription|polic(y|ie)|membership|warrant(y|ie)|licen[cs]e"
    r"|agreement|mortgage|retainer|guarantee)s?$"
)
_TERM_START = re.compile(
    r"^(?:(.+)_)?(start|starts|started|begin|begins|commence[sd]?|from)(_(date|on|at))?$"
)
_TERM_END = re.compile(
    r"^(?:(.+)_)?(end|ends|ended|expiry|expires|expiration|to|until|maturity)(_(date|on|at))?$"
)
_NOT_TERM_ENDS = frozenset({"frozen", "paused", "trial", "suspended"})  # a pause ends, not the term
_TERM_MONTHS = re.compile(r"(^|_)(term|duration|length)_?(in_)?months?$")


def movable_dates(entity: EntitySpec) -> list[str]:
    """The date fields whose values the platform may move: any a seed does not pin by a pattern, an
    enum or a constant (a declared `format: date` still holds a moved date)."""
    return [
        a.name
        for a in entity.attributes
        if a.type in ("date", "datetime")
        and (a.declared is None or not {"pattern", "enum", "const"} & set(a.declared))
    ]


def _runs_its_term(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """A lease, contract or policy ends its term after it starts: the months its own term field
    says, else 6, 12 or 24 (a lease from 2025-08-02 to 2025-09-05 is no lease). An end pairs with
    the start of its own name (`valid_to` with `valid_from`), else with the record's start."""
    if not _TERM_ENTITY.search(entity.name):
        return
    movable = movable_dates(entity)
    # the first start of each name: the domain's `start_date` before a seed's `start_on`
    starts: dict[str, str] = {}
    for n in movable:
        if (m := _TERM_START.match(n)) is not None and moment_of(record.get(n)) is not None:
            starts.setdefault(m.group(1) or "", n)
    said = next(
        (v for k, v in record.items() if _TERM_MONTHS.search(k) and isinstance(v, int) and 0 < v <= 600), None
    )
    months = said or rng.choice((6, 12, 12, 12, 24))
    for name in movable:
        m = _TERM_END.match(name)
        if m is None or m.group(1) in _NOT_TERM_ENDS or moment_of(record.get(name)) is None:
            continue
        start_name = starts.get(m.group(1) or "") or starts.get("") or next(iter(starts.values()), None)
        start = moment_of(record.get(start_name)) if start_name else None
        if start is None:
            continue
        year, month = divmod(start.month - 1 + months, 12)
        end = start.replace(year=start.year + year, month=month + 1, day=min(start.day, 28)) - timedelta(
            days=1
        )
        record[name] = _as(record[name], end)


_TERM_OVER = frozenset({"expired", "ended", "terminated", "lapsed", "closed", "cancelled", "canceled",
                        "completed", "inactive", "void", "voided", "matured", "fulfilled"})  # fmt: skip
_TERM_RUNNING = frozenset({"active", "renewed", "current", "in_force", "ongoing", "signed", "live", "valid"})
_VALIDITY_OVER = frozenset({"expired", "lapsed", "void", "voided", "invalid"})
_TERM_AHEAD = frozenset({"pending", "draft", "scheduled", "upcoming", "proposed", "not_started", "future"})


def term_in_time(entity: EntitySpec, record: dict[str, Any], status: str, rng: random.Random) -> None:
    """A term's dates agree with its status at the clock (`NOW`): an expired contract ended before
    it, an active lease runs across it, a pending one starts after it; so do the dates of a thing
    valid for a while (an expired certification, a valid passport). The record's dates move
    together, so their order and the term's length stay; what has happened stays before the clock."""
    dated = {
        n: m
        for n in movable_dates(entity)
        if not _BIRTH.search(n) and (m := moment_of(record.get(n))) is not None
    }
    said = status.lower()
    if _TERM_ENTITY.search(entity.name):
        start = next((m for n, m in dated.items() if _TERM_START.match(n)), None)
        end = next(
            (m for n, m in dated.items() if (e := _TERM_END.match(n)) and e.group(1) not in _NOT_TERM_ENDS),
            None,
        )
        over = _TERM_OVER
    else:
        # a thing valid for a while (`_VALID_FOR`): an expired passport ran out before the clock, a
        # valid one runs across it; a `completed` vaccination says nothing about its expiry
        start = max((m for _, m in _issue_dates(list(dated), record)), default=None)
        end = next((m for n, m in dated.items() if _validity(entity, n) is not None), None)
        over = _VALIDITY_OVER
        if said in _TERM_AHEAD:
            return
    if start is None or end is None or end <= start:
        return
    if said in over and end >= NOW:
        shift = NOW - timedelta(days=rng.randint(1, 180)) - end
    elif said in _TERM_RUNNING and not start <= NOW < end:
        shift = NOW - timedelta(days=rng.randint(0, max(0, (end - start).days - 1))) - start
    elif said in _TERM_AHEAD and start <= NOW:
        shift = NOW + timedelta(days=rng.randint(3, 45)) - start
    else:
        return
    for name, moment in dated.items():
        record[name] = before_clock(name, _as(record[name], moment + shift), rng)


_TIMED_STEP = timedelta(days=3)
_DATED_STEP = timedelta(days=45)
_DUE_STEP = timedelta(days=120)


# when a record came to be: every dated fact of a record that points at it comes after (a ticket's
# messages are sent after it was opened, an allocation after its invoice's date)
_CREATED = re.compile(
    r"created|opened|submitted|registered|(^|_)issued|joined|hired|signed_up|placed|(^|_)ordered|enrolled|"
    r"onboarded|(^|_)(invoice|bill|order|statement|transaction)_date$"
)


def creation_dates(entity: EntitySpec) -> list[str]:
    """The date fields that say when a record of `entity` came to be, of those the platform may move."""
    return [n for n in movable_dates(entity) if _CREATED.search(n) and not _BIRTH.search(n)]


def dated_facts(entity: EntitySpec) -> list[str]:
    """Every date field of `entity` but a birth date."""
    return [a.name for a in entity.attributes if a.type in ("date", "datetime") and not _BIRTH.search(a.name)]


def first_dated(names: Iterable[str], record: Mapping[str, Any]) -> tuple[str, datetime] | None:
    """(field, moment) of the earliest of the fields `names` that `record` gives a date in."""
    return min(
        ((n, m) for n in names if (m := moment_of(record.get(n))) is not None),
        key=lambda d: d[1],
        default=None,
    )


def comes_before(earlier: Any, later: Any) -> bool:
    """Whether the date `later` lies before the date `earlier`: by day, and by the clock only where
    both give a time (a message sent at 10:00 on the day its ticket was opened, dated by day alone,
    comes after it)."""
    first, then = moment_of(earlier), moment_of(later)
    if first is None or then is None:
        return False
    if "T" in str(earlier) and "T" in str(later):
        return then < first
    return then.date() < first.date()


def in_lifecycle_order(
    entity: EntitySpec, given: Mapping[str, Any], record: Mapping[str, Any], rng: random.Random
) -> dict[str, str]:
    """New values for the dates `given` to a record (by field) where they break its lifecycle, with
    each other or with the dates the record already has: a planned end before the planned start moves
    after it (hours after it, where it gives a time), a due date after the start, a start changed past
    the record's end before that end.
    Only the fields that move are returned, each written the way it was given."""
    current = {n: record.get(n) for n in dated_facts(entity) if n not in given}
    values = {n: v for n, v in given.items() if not _BIRTH.search(n) and moment_of(v) is not None}
    moved: dict[str, str] = {}
    for p, name in sorted((phase(n), n) for n in values if phase(n)):
        value = values[name]
        timed = "T" in str(value)
        # what comes first: a start before its end; for a due date, the starts
        before = [
            m
            for n, v in {**current, **values}.items()
            if n != name
            and (phase(n) == 1 if p == 4 else 1 <= phase(n) < p)
            and (m := moment_of(v)) is not None
        ]
        after = [m for n, v in current.items() if p < phase(n) <= 3 and (m := moment_of(v)) is not None]
        moment = moment_of(value) or NOW
        low, high = max(before, default=None), min(after, default=None)
        # what starts at 4:30 PM ends hours later, not a month later; a due time may be days ahead
        hours = 8 if p == 3 else 48
        step = (
            timedelta(minutes=15 * rng.randint(4, 4 * hours)) if timed else timedelta(days=rng.randint(1, 14))
        )
        if low is not None and (
            (moment < low if timed else moment.date() < low.date())
            or (timed and p == 3 and moment - low > _TIMED_STEP)
        ):
            moment = low + step
        elif high is not None and moment > high and (low is None or high - step > low):
            moment = high - step
        else:
            continue
        values[name] = moved[name] = _as(str(value), moment)
    return {**moved, **on_its_day(entity, {**given, **moved}, record)}


# a date named for what has happened (`sent_at`, `paid_on`, `inspected_at`), unless it is a plan, a
# limit or an expectation
_HAPPENED = re.compile(
    r"^([a-z0-9]+_)*([a-z]+ed|paid|sent|made|done|taken|given|sold|won|lost|built|rebuilt|spent|held|met|left|"
    r"begun|seen|written|shown|read|caught|fed|bought|brought|sought|taught|struck|hung|dug|shot|drawn|worn|"
    r"torn|flown|grown|thrown|chosen|frozen|stolen|spoken|broken|ridden|driven|hidden|eaten|fallen|kept|"
    r"felt|dealt|lent)_(at|on|date|time)$"
)
_PLANS = re.compile(
    r"schedul|planned|expected|due|expir|target|estimat|next|intended|proposed|valid|promised|needed|"
    r"required|desired|preferred|committed|agreed|allowed|limited|(^|_)for_"
)


def has_happened(name: str) -> bool:
    """Whether a date field says when something happened (a message sent, an invoice paid)."""
    return _HAPPENED.match(name) is not None and _PLANS.search(name) is None and not _BIRTH.search(name)


def happened_by_now(entity: EntitySpec, record: dict[str, Any], rng: random.Random) -> None:
    """What a record says has happened lies before the clock (`NOW`): where a message was sent or an
    inspection made after it, all the record's dates move back together, so their order and gaps
    stay, to end some days before the clock."""
    dated = {
        n: m
        for n in movable_dates(entity)
        if not _BIRTH.search(n) and (m := moment_of(record.get(n))) is not None
    }
    late = [m for n, m in dated.items() if has_happened(n) and m > NOW]
    if not late:
        return
    shift = max(late) - NOW + timedelta(days=rng.randint(1, 30), minutes=15 * rng.randint(0, 40))
    for name, moment in dated.items():
        record[name] = _as(record[name], moment - shift)


def created_before(value: str, moment: datetime, rng: random.Random) -> str:
    """A creation date moved to some days before `moment`, written the way `value` is written."""
    return _as(value, moment - timedelta(days=rng.randint(1, 30), minutes=15 * rng.randint(0, 40)))


# ---------------------------------------------------------------- strings


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


def _abbr(word: str) -> str:
    letters = re.sub(r"[^a-z]", "", word.lower())
    consonants = letters[0] + re.sub("[aeiou]", "", letters[1:]) if letters else "ref"
    return (consonants if len(consonants) >= 3 else letters)[:3].upper() or "REF"


def person_name(world: World, rng: random.Random) -> tuple[str, str]:
    p = pools(world.locale)
    return rng.choice(p.first), rng.choice(p.last)


def full_name(first: str, last: str, locale: str) -> str:
    if locale in _FAMILY_FIRST:
        return f"{last}{first}" if locale != "hu_HU" else f"{last} {first}"
    return f"{first} {last}"


_CODES: list[tuple[str, str]] = [
    (r"(^|_)sku$", "[A-Z]{3}-[0-9]{4}-[A-Z]{2}"),
    # an asset's purchase order is a number, not "Bayview Expansion"
    (r"purchase_order|(^|_)po$", "PO-[0-9]{6}"),
    (r"(^|_)vin$", "[A-HJ-NPR-Z0-9]{17}"),
    (r"tracking", "1Z[0-9A-Z]{16}"),
    (r"(^|_)(ip|ip_address)$", "10\\.[0-9]{1,2}\\.[0-9]{1,2}\\.[1-9][0-9]?"),
    (r"sha|checksum|hash|fingerprint", "[0-9a-f]{12}"),
    (r"ticker|(^|_)symbol$", "[A-Z]{3,4}"),
    (r"iata|airport_code", "[A-Z]{3}"),
    (r"(^|_)lei$", "[0-9]{4}00[A-Z0-9]{12}[0-9]{2}"),
    (r"(^|_)npi$", "1[0-9]{9}"),
    (r"icd", "[A-TV-Z][0-9]{2}\\.[0-9]"),
    (r"(^|_)ndc$", "[0-9]{5}-[0-9]{4}-[0-9]{2}"),
    (r"(^|_)mrn$", "[0-9]{8}"),
    (r"cusip", "[0-9]{3}[0-9A-Z]{5}[0-9]"),
    (r"account_number|acct", "[0-9]{10}"),
    (r"routing", "[0-9]{9}"),
    (r"serial", "SN[0-9A-Z]{10}"),
    (r"(^|_)(lot|batch)", "(LOT|BT)-[0-9]{6}"),
    (r"version|firmware|release_tag|(^|_)tag$", "[1-4]\\.[0-9]{1,2}\\.[0-9]{1,2}"),
    (r"postcode|zip|postal", ""),
    (r"license_number|licence_number|registration_number", "[A-Z]{2}-[0-9]{6}"),
    (r"dea", "[A-Z]{2}[0-9]{7}"),
]


@cache
def _code_patterns(name: str) -> list[tuple[str, str]]:
    return [(rx, pattern) for rx, pattern in _CODES if re.search(rx, name)][:1]


def _code(attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random) -> Any:
    n = attr.name
    for rx, pattern in _code_patterns(n):
        if rx:
            if not pattern:
                return str(faker(world.locale, rng).postcode())
            return regex_string(f"^{pattern}$", rng) or MISSING
    if re.search(r"plate|registration$", n):
        return str(faker(world.locale, rng).license_plate())
    if re.search(r"iban", n):
        return str(faker(world.locale, rng).iban())
    if re.search(r"swift|(^|_)bic$", n):
        return str(faker(world.locale, rng).swift())
    if re.search(r"isbn", n):
        return str(faker("en_US", rng).isbn13())
    if re.search(r"ean|barcode|upc|gtin", n):
        return str(faker(world.locale, rng).ean13())
    if re.search(r"flight", n):
        return f"{rng.choice(_AIRLINES)}{rng.randint(100, 2999)}"
    if re.search(r"(^|_)(hostname|host)$", n):
        return f"{rng.choice(('web', 'api', 'db', 'cache', 'worker', 'edge'))}-{rng.randint(1, 40):02d}.{rng.choice(('us-east-1', 'eu-west-1', 'ap-south-1'))}.internal"
    if re.search(r"(^|_)cost_cent(er|re)$", n):
        return f"CC-{rng.randint(1000, 9999)}"
    m = re.search(r"^(?P<what>[a-z_]*?)_?(number|no|ref|reference|code|id)$", n)
    if m:
        what = m["what"] or entity.name
        prefix = _abbr(what.split("_")[-1])
        if re.search(r"invoice|order|po|claim|case|ticket|booking|reservation|confirmation|policy", what):
            return f"{prefix}-{NOW.year - rng.randint(0, 1)}-{rng.randint(1, 99999):05d}"
        if n.endswith("code"):
            return f"{prefix}{rng.randint(100, 9999)}"
        return f"{prefix}-{rng.randint(100000, 999999)}"
    return MISSING


# Transit stops are named after the streets they stand on and the places beside them.
_STOP_STREETS = ("Main Street", "Oak Avenue", "Park Road", "Church Street", "High Street", "Market Street",
                 "Station Road", "Elm Street", "3rd Avenue", "Washington Boulevard", "King Street", "Mill Lane",
                 "River Road", "Bridge Street", "Victoria Road", "Lincoln Avenue", "5th Street", "Harbor Drive",
                 "College Avenue", "Broadway", "Maple Street", "Cedar Lane", "Franklin Street", "Grand Avenue")  # fmt: skip
_STOP_PLACES = ("City Hall", "Central Library", "General Hospital", "Union Station", "Civic Center",
                "Riverside Park", "University", "Stadium", "Airport Terminal 2", "Market Square", "Ferry Terminal",
                "Museum", "High School", "Shopping Centre", "Bus Depot", "Town Square")  # fmt: skip
_STOP_ENTITY = re.compile(r"(^|_)(stop|bus_stop|stop_point|halt|tram_stop)$")


def stop_name(rng: random.Random) -> str:
    """A transit stop's name: "Main Street & 3rd Avenue", "Union Station", "Oak Avenue / University"."""
    a, b = rng.sample(_STOP_STREETS, 2)
    roll = rng.random()
    if roll < 0.55:
        return f"{a} & {b}"
    return rng.choice(_STOP_PLACES) if roll < 0.8 else f"{a} / {rng.choice(_STOP_PLACES)}"


def kind_value(field_name: str, owner: str, world: World, rng: random.Random) -> str | None:
    """A value of the kinds vocabulary (`taxonomy.kinds`) for a field of `owner` in the world's domain,
    its slots filled from the locale ("{last} Family Farm" -> "Miller Family Farm"); None where no
    kind fits."""
    values = kind_values(field_name, owner, world.domain)
    if not values:
        return None
    p = pools(world.locale)
    fill = {
        "first": lambda: rng.choice(p.first), "last": lambda: rng.choice(p.last),
        "city": lambda: rng.choice(p.cities), "street": lambda: street_name(rng.choice(p.streets)),
        "company": lambda: rng.choice(p.companies), "year": lambda: str(NOW.year - rng.randint(0, 4)),
        "n": lambda: str(rng.randint(1, 9)), "nn": lambda: str(rng.randint(10, 99)),
        "letter": lambda: rng.choice("ABCDEFGH"),
    }  # fmt: skip
    return re.sub(r"\{([a-z]+)\}", lambda m: fill[m.group(1)](), rng.choice(values))


def street_name(address: str) -> str:
    """The street of a street address, as a place is named after it: "Donna Harbor" of "46948 Donna
    Harbor Suite 825" (never a clinic called "46948 Donna Harbor Suite 825 Vet Surgery")."""
    kept = [
        w
        for w in re.sub(r"\b(Suite|Apt\.?|Unit|Ste\.?|No\.?)\s*\S+", "", address).split()
        if not any(c.isdigit() for c in w)
    ]
    return " ".join(kept).strip(" ,") or address


_SITE_WORDS = frozenset({"location", "site", "branch", "office", "store_location"})
_AREAS = ("Downtown", "Midtown", "Uptown", "Northside", "Southside", "Eastside", "Westside", "Airport",
          "Riverside", "Old Town", "Harbor", "Central", "North", "South", "East", "West")  # fmt: skip


def name_for(attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random) -> str:
    """The name or title of a record that is not a person."""
    p = pools(world.locale)
    label = entity.name.replace("_", " ").title()
    if _STOP_ENTITY.search(entity.name):
        return stop_name(rng)
    named = kind_value(attr.name, entity.name, world, rng)
    if named is not None:  # a freezer, a farm, an album, a deck: named as such things are everywhere
        return named
    if ORG_ENTITY.search(entity.name) and attr.name != "title":
        return rng.choice(p.companies) if rng.random() < 0.6 else f"{rng.choice(p.last)} {label}"
    place = PLACE_ENTITY.search(entity.name)
    if place is not None and place.group(2) in _SITE_WORDS:
        # a business's sites go by their town and part of town ("Boise Downtown"), never "Boise Location"
        return f"{rng.choice(p.cities)} {rng.choice(_AREAS)}"
    if place is not None:
        return f"{rng.choice(p.cities if rng.random() < 0.5 else QUALIFIERS)} {label}"
    if re.search(r"title|subject|headline|summary_line", attr.name):
        return rng.choice(p.phrases)
    return f"{rng.choice(QUALIFIERS)} {rng.choice(THEMES)} {label}"


# (kind, pattern on the attribute name), first match wins; `_string_kind` decides once per name
_STRING_KINDS: list[tuple[str, str]] = [
    ("email", r"e_?mail"),
    ("password", r"pass_?word|passphrase|pass_?code|(^|_)(secret|pin)$"),
    ("token", r"(^|_)(cursor|token|nonce|etag|checksum|hash|fingerprint)$"),
    ("month", r"(^|_)month$"),
    ("weekday", _WEEKDAY),
    ("moment", r"(^|_)(date_?time|timestamp)$|_at$"),
    ("clock", r"^(time|time_of_day|(start|end|opening|closing|departure|arrival|pickup|delivery)_time)$"),
    ("utc_offset", r"time_difference|utc_offset|tz_offset"),
    ("tag", r"^(tags?|labels|keywords?|hashtags?)$|_(tags|labels|keywords|hashtags)$"),
    ("username", r"user_?name|handle|login"),
    ("website", r"website|homepage|(^|_)url$|link"),
    ("phone", r"phone|mobile|fax|telephone|msisdn|(^|_)cell$"),
    ("first_name", r"(^|_)first_?name$"),
    ("last_name", r"(^|_)(last_?name|surname|family_name)$"),
    (
        "other_person",
        r"(full|contact|person|patient|customer|driver|guest|owner|employee)_?name$"
        r"|(^|_)(headliner|supporting_acts?|performers?|artists?|speakers?|presenters?|attendees?|members?"
        r"|contributors?|authors?|attorneys?|lawyers?|counsel|participants?|assignees?|reviewers?|approvers?"
        r"|witness(es)?|invitees?|organi[sz]ers?|instructors?|coaches|coach|players?|cast|director|manager"
        r"|coordinator|supervisor|officer|lead|counsel+or)(_name)?$|(^|_)signature_name$|(^|_)signed_by_name$",
    ),
    ("company", ORG_ATTR.pattern),
    ("secondary", r"suite|apartment"),
    ("state", r"(^|_)(state|province|county|license_state)$"),
    ("country_code", r"country_code"),
    ("country", r"nationality"),
    ("place", r"(^|_)(location|site|venue|branch|office|region|area|district|neighbou?rhood)$"),
    ("currency", r"currency"),
    ("language", r"language"),
    ("timezone", r"timezone|time_zone|tz$"),
    ("color", r"colou?r"),
    ("file_name", r"file_?name|attachment|(^|_)file$"),
    ("path", r"(^|_)path$"),
    ("mime", r"mime|content_type|media_type"),
    ("job", r"job|position|occupation|(^|_)role$|specialty|specialism"),
    ("department", r"department|(^|_)dept"),
    ("team", r"(^|_)team$|_team$|squad"),
    ("industry", r"industry|sector"),
    ("unit", r"(^|_)unit$|uom"),
    ("weather", r"weather"),
    ("allergy", r"allerg"),
    ("medication", r"(^|_)(medications?|meds|current_drugs?)$"),
    ("period", r"^(period|quarter|(fiscal|billing|reporting|pay|accounting)_period)$"),
    ("folder", r"^(folder|directory|parent_folder)(_name)?$"),
    ("chapter", r"^chapter$"),
]


_PERSON_NAMED = re.compile(rf"(^|_)({_PERSON_WORDS})_?name$")


def _place_kind(name: str) -> str:
    """Which part of an address a PLACE_FIELD attribute holds."""
    if re.search(r"(^|_)(city|town)$", name):
        return "city"
    if re.search(r"country$", name):
        return "country"
    if re.search(r"post|zip", name):
        return "postcode"
    if re.search(r"(line_?|address_?|_)2$", name):
        return "secondary"
    if re.search(r"street|line_?1$|address_?1$", name):
        return "street"
    return "address"


@cache
def _string_kind(name: str, person: bool) -> str:
    if person and name in ("name", "display_name", "displayname"):
        return "own_name"
    if PLACE_FIELD.match(name):
        return _place_kind(name)
    if re.search(r"(^|_)(user_?name|login|handle|screen_?name|nickname)$", name):
        return "username"  # a handle, not the person's name, however it is spelled
    if re.search(r"(^|_)mac(_address)?$", name):
        return "mac"
    if re.fullmatch(r"full_?name", name):
        return "own_name" if person else "other_person"
    if re.fullmatch(r"display_?name", name):
        return "name"
    if _PERSON_NAMED.search(name) and not ORG_ATTR.search(name):
        return "other_person"
    if PERSON_ROLE_ATTR.search(name) and not name.endswith("_id") and not ORG_ATTR.search(name):
        kinds = [k for k, rx in _STRING_KINDS[:10] if re.search(rx, name)]
        return kinds[0] if kinds else "other_person"
    for kind, rx in _STRING_KINDS:
        if re.search(rx, name):
            return kind
    if name == "by":
        return "other_person"  # a custody step's "by", a change's "by": someone did it
    if _SLOTS.search(name):
        return "slot"
    if re.fullmatch(r"(kind|type|category|class|variant|sort)", name):
        return "sort"
    return (
        "code"
        if any(re.search(rx, name) for rx, _ in _CODES)
        or re.search(
            r"plate|registration$|iban|swift|(^|_)bic$|isbn|ean|barcode|upc|gtin|flight|(^|_)(hostname|host)$"
            r"|(^|_)cost_cent(er|re)$"
            r"|(number|no|ref|reference|code|id)$",
            name,
        )
        else "name"
        if re.search(r"(^|_)(name|title|label|subject|headline)$", name)
        else "other"
    )


# The parts of an address a seed's object spells out, by the key it uses for each.
_ADDRESS_PARTS = (
    ("street", re.compile(r"^(street|street_address|address_?line_?1|line_?1|address_?1|street_?1)$")),
    ("secondary", re.compile(r"^(address_?line_?2|line_?2|address_?2|street_?2)$")),
    ("city", re.compile(r"^(city|town|locality)$")),
    ("state", re.compile(r"^(state|province|state_code|province_code)$")),
    ("postcode", re.compile(r"^(postal_?code|post_?code|zip|zip_?code)$")),
    ("country", re.compile(r"^(country|country_code|country_name)$")),
)


def one_place(obj: Mapping[str, Any], world: World, rng: random.Random) -> dict[str, str]:
    """New values for the address parts of one object (`line1`, `city`, `postal_code`, `country`)
    that name one place of the world's locale: a street, city and postcode of one country, the
    country as its code where the object holds a code ('GB') and by name otherwise. Empty where the
    object spells out fewer than two parts, or no city or postcode."""
    parts = {
        k: kind
        for k, v in obj.items()
        if isinstance(k, str) and isinstance(v, str)
        for kind, pattern in _ADDRESS_PARTS
        if pattern.match(k)
    }
    if len(parts) < 2 or not {"city", "postcode"} & set(parts.values()):
        return {}
    p = pools(world.locale)
    gen = faker(world.locale, rng)
    # a real city, with its state and postcode: the one the object's name mentions ("Kryterion Denver"),
    # else any of the locale's
    named = [
        v for k, v in obj.items() if isinstance(v, str) and re.search(r"(^|_)(name|title|label)$", str(k))
    ]
    cities = real_cities(world.locale)
    city = next((c for v in named if (c := city_in(v, world.locale)) is not None), None)
    city = city or (rng.choice(cities) if cities else None)
    out: dict[str, str] = {}
    for key, kind in parts.items():
        short = len(obj[key]) <= 3 or key.endswith("_code")
        if kind == "street":
            out[key] = rng.choice(p.streets)
        elif kind == "secondary":
            out[key] = rng.choice(p.secondary)
        elif kind == "city":
            out[key] = city.name if city is not None else rng.choice(p.cities)
        elif kind == "state":
            abbr = getattr(gen, "state_abbr", None)
            if city is not None:
                out[key] = city.region_code if short else city.region
            else:
                out[key] = str(abbr()) if short and abbr is not None else rng.choice(p.states)
        elif kind == "postcode":
            out[key] = postcode(city, world.locale, rng) if city is not None else str(gen.postcode())
        else:
            out[key] = str(gen.current_country_code() if short else gen.current_country())
    return out


def leaf_string(name: str, rng: random.Random, world: World, where: str = "") -> str | None:
    """A string inside a seed's list or object, named by the schema generator (`values.hint_string`):
    an item of `supporting_acts` is `supporting_act`, a venue's name `venue_name`. The domain's
    vocabulary where one of its entities lists values so named (`exercise_name` is the fitness
    domain's exercise names), else the kind its name reads as (a person, a month, a token, a tag); None
    where neither has an opinion."""
    vocab = world.vocab
    if vocab is not None:
        head, _, tail = name.rpartition("_")
        forms = (name, f"{name}s", f"{name}es", f"{name[:-1]}ies" if name.endswith("y") else name)
        for owner, attr in ((head, tail), *((e, f) for e in sorted(vocab.values) for f in forms)):
            entry = vocab.entry(owner, attr) if owner else None
            if entry is not None and entry.kind in ("list", "pattern", "faker"):
                value = from_vocab(entry, AttributeSpec(name=attr, type="str"), _stub(owner), world, rng)
                if value is not MISSING:
                    return str(value)
            listed = vocab.names(owner, attr) if owner and entry is None else ()
            if listed:  # a name the vocabulary keeps beside its code
                return rng.choice(listed)
    head, _, tail = name.rpartition("_")
    named = _class_name(head or name, world, rng)
    if named is not None:
        return named
    # what such a field holds in any domain (a follow-up's `channel`, a split's `memo`); `where` is
    # the record's attribute the value sits in ("statement.open_invoices")
    named = kind_value(name, where, world, rng)
    if named is None and head:
        named = kind_value(tail, f"{where}.{head}", world, rng)
    if named is not None:
        return named
    if free_text("str", name):
        # a remark inside a record's object speaks of what holds it (an approval step's comment),
        # never of a delivery or a supplier the domain does not have
        holder = _stub(where.rpartition(".")[2] or head or "record")
        return text_for(AttributeSpec(name=name, type="text"), holder, world, rng, {})
    entity = _stub(head or "record")
    kind = _string_kind(name, is_person(entity))
    named_place = kind == "name" and (ORG_ENTITY.search(head or "-") or PLACE_ENTITY.search(head or "-"))
    if kind == "code":  # an ICD-10 code in a patient's problem list, a SKU in an order line
        code = _code(AttributeSpec(name=name, type="str"), entity, world, rng)
        if code is not MISSING:
            return str(code)
    if kind in ("other", "name") and not named_place:
        # what a related domain's vocabulary calls such a thing: a vehicle's `make`, a vaccination's
        # `vaccine`, an exercise's `exercise_name` (the exercise names of a fitness domain)
        lent = borrowed_names(head, tail, world.domain) if head else None
        known = lent.values if lent is not None else borrowed_values(name, world.domain)
        if not known and tail != name and tail not in NAME_ATTRS:
            known = borrowed_values(tail, world.domain)
        return str(rng.choice(known)) if known else None
    if kind == "code" and not named_place:
        return None
    value = string_for(AttributeSpec(name=name, type="str"), entity, world, rng, {})
    return value if isinstance(value, str) else None


# Attributes that sort records into kinds, most telling first: where a seed's free-form category or
# tag finds its names among the spec's own (a pet store's category is a species of the pet domain).
_CLASSIFIER = re.compile(
    r"(^|_)(category|categories|genre|species|type|kind|breed|class|segment|topic|cuisine|style"
    r"|department|tags?)$"
)
_CLASSIFIED = re.compile(
    r"^(categor(y|ies)|tags?|labels?|genres?|topics?|segments?|classes|groups?|collections?)$"
)
_CATCH_ALL = frozenset({"any", "all", "other", "others", "unknown", "none", "n/a", "na", "misc", "mixed"})
_CLASS_ORDER = ("category", "categories", "genre", "species", "breed", "topic", "cuisine", "style",
                "segment", "department", "class", "type", "kind", "tag", "tags")  # fmt: skip


def _class_name(owner: str, world: World, rng: random.Random) -> str | None:
    """The name of a seed's category, tag or label (`category_name`, a `tags` item's `tags_name`)
    drawn from the values the spec's classifying attributes take, read as words ('in_house' ->
    'In house'); None where the owner is no such thing or the spec classifies nothing."""
    if not world.classes or not _CLASSIFIED.match(owner):
        return None
    own = owner.rstrip("s") if owner.endswith(("tags", "labels")) else owner
    order = sorted(world.classes, key=lambda a: (not a.startswith(own), _rank(a)))
    # a category is the most telling classifier's; a record's tags mix what all of them say
    picked = (
        order[0] if order[0].startswith(own) or not own.startswith(("tag", "label")) else rng.choice(order)
    )
    pool = [v for v in world.classes[picked] if v.casefold() not in _CATCH_ALL] or world.classes[picked]
    value = rng.choice(pool)
    text = value.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _rank(attr: str) -> int:
    tail = attr.rpartition("_")[2]
    return _CLASS_ORDER.index(tail) if tail in _CLASS_ORDER else len(_CLASS_ORDER)


def _named_after(attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random) -> Any:
    """A plain-text field named after another of the domain's entities holds one of that entity's
    names: a prescription's `drug` is a drug the domain's vocabulary names (`drug_a` and `drug_b` of an
    interaction too), a planting's `variety` a variety. MISSING when no such entity lists names."""
    vocab = world.vocab
    if vocab is None:
        return MISSING
    base = re.sub(r"_(name|title|[ab12]|primary|secondary|other)$", "", attr.name)
    for owner in dict.fromkeys((base, base[:-1] if base.endswith("s") else base)):
        if owner == entity.name:
            continue
        for label in ("name", "title"):
            found = vocab.entry(owner, label)
            if found is not None and found.kind == "list":
                return from_vocab(found, AttributeSpec(name=label, type="str"), _stub(owner), world, rng)
            listed = vocab.names(owner, label)  # names kept beside their codes in a linked group
            if listed:
                return rng.choice(listed)
    return MISSING


@cache
def _stub(name: str) -> EntitySpec:
    """An entity called `name` with nothing but a key: what the kinds by name need to know of it."""
    return EntitySpec(name=name, table=f"{name}s", description="", key="id", id_prefix="REC",
                      attributes=(AttributeSpec(name="id", type="str"),))  # fmt: skip


def is_handle(attr: AttributeSpec, entity: EntitySpec, declared: Any) -> bool:
    """Whether a key is a person's handle the seed leaves free-form (a `username`, an `email`): its
    records are keyed by a handle made from the person's name, not by a numbered code."""
    free = (
        isinstance(declared, Mapping)
        and not {"pattern", "enum", "const"} & set(declared)
        and declared.get("format") in (None, "email", "idn-email")
    )
    return (
        attr.type == "str"
        and (declared is None or free)
        and _HANDLE_KEY.search(attr.name) is not None  # an `email_thread_id` is not an e-mail
        and _string_kind(attr.name, is_person(entity)) in ("username", "email")
    )


_HANDLE_KEY = re.compile(r"(^|_)(user_?name|login|handle|screen_?name|e_?mail(_address)?)$")


# what a `*_url` that names a stored file holds: its folder and its file type
_STORED_FILES = (
    (re.compile(r"photo|image|picture|thumbnail|avatar|scan|screenshot|evidence"), "images", "jpg"),
    (re.compile(r"audio|recording|voice"), "audio", "mp3"),
    (re.compile(r"video"), "video", "mp4"),
    (
        re.compile(r"resume|cv_|document|file|attachment|pdf|report|invoice|receipt|contract"),
        "documents",
        "pdf",
    ),
)


def string_for(
    attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random, record: dict[str, Any]
) -> Any:
    """A plausible non-free-text string by name, entity and locale (MISSING: no opinion)."""
    n = attr.name
    p = pools(world.locale)
    kind = _string_kind(n, is_person(entity))
    if kind == "company" and n == "label" and PLACE_ENTITY.search(entity.name):
        kind = "name"  # a saved location's label names the place ("Boise Downtown"), not a record label
    domain_kind = _entity_string(n, entity, record, rng)
    if domain_kind is not None:
        return domain_kind
    named = kind_value(n, entity.name, world, rng)
    if named is not None:
        return named
    if kind == "email":
        site = org_domain(record) if ORG_ENTITY.search(entity.name) else None
        if site is not None and world.person is None and named_person(record, world.locale) is None:
            # a company's own mailbox at its own domain ("orders@paperchain.com"), not a gmail address
            return f"{rng.choice(_ORG_MAILBOXES)}@{site}"
        return email_for(world, rng, record, is_person(entity), domain=site or "")
    if kind == "token":
        return "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice((16, 24, 32))))
    if kind == "month":
        return str(faker("en_US", rng).month_name())
    if kind == "weekday":  # the day of the record's own date where it has one
        day = _record_day(record, n)
        if day is not None:
            return day.strftime("%A")
        return rng.choice(("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"))
    if kind == "moment":  # a moment named as such but typed as plain text: ISO 8601, near the clock
        moment = NOW + timedelta(minutes=rng.randint(-60 * 24 * 90, 60 * 24 * 30))
        return moment.replace(second=0).isoformat()
    if kind == "clock":
        return f"{rng.randint(6, 21):02d}:{rng.choice((0, 15, 30, 45)):02d}"
    if kind == "period":  # a quarter, or a month for what is billed or paid by the month
        back = rng.randint(0, 7)  # this one or one of the seven before it
        if re.search(r"billing|pay", n):
            months = NOW.year * 12 + NOW.month - 1 - back
            return NOW.replace(year=months // 12, month=months % 12 + 1, day=1).strftime("%B %Y")
        quarters = NOW.year * 4 + (NOW.month - 1) // 3 - back
        return f"Q{quarters % 4 + 1} {quarters // 4}"
    if kind == "folder":
        top = rng.choice(_FOLDERS)
        return f"{top}/{NOW.year - rng.randint(0, 2)}" if rng.random() < 0.5 else top
    if kind == "chapter":
        return f"Chapter {rng.randint(1, 24)}"
    if kind == "utc_offset":
        return f"{rng.choice((-8.0, -5.0, -3.0, 0.0, 1.0, 2.0, 5.5, 8.0, 9.0, 13.0)):+.1f}h"
    if kind == "tag":
        return str(faker("en_US", rng).word(part_of_speech=rng.choice(("noun", "adjective"))))
    if kind == "password":
        return str(faker("en_US", rng).password(length=rng.randint(10, 16)))
    if kind == "username":
        first, last = world.person or person_name(world, rng)
        return (
            f"{_ascii(first)[:1]}{_ascii(last)}{rng.randint(1, 99) if rng.random() < 0.4 else ''}" or "user"
        )
    if kind == "website":
        stored = next(((folder, ext) for rx, folder, ext in _STORED_FILES if rx.search(n)), None)
        if stored is not None and not org_domain(record):
            # the files of one business are kept in one store, not one store per photo
            world.file_host = world.file_host or org_domain({"name": rng.choice(p.companies)})
        site = org_domain(record) or (world.file_host if stored else None)
        site = site or org_domain({"name": rng.choice(p.companies)}) or "example.com"
        if stored is not None:  # a file's address in a store, not a company's home page
            folder, ext = stored
            day = NOW.date() - timedelta(days=rng.randint(0, 400))
            token = "".join(rng.choice("0123456789abcdef") for _ in range(12))
            return f"https://files.{site}/{folder}/{day:%Y/%m}/{token}.{ext}"
        return f"https://www.{site}"
    if kind == "phone":
        # a record's phone is a line to reach, not a switchboard extension ("290.691.9963x12303")
        # nor dialled from abroad ("001-386-648-5760"): a US number as people write it at home
        number = re.split(r"\s*(?:x|ext\.?)\s*\d+$", str(faker(world.locale, rng).phone_number()))[0]
        digits = re.sub(r"\D", "", number)[-10:]
        if world.locale == "en_US" and len(digits) == 10:
            return rng.choice(
                (f"({digits[:3]}) {digits[3:6]}-{digits[6:]}", f"{digits[:3]}-{digits[3:6]}-{digits[6:]}")
            )
        return number
    if kind in ("first_name", "last_name", "own_name"):
        world.person = world.person or person_name(world, rng)
        first, last = world.person
        return (
            first
            if kind == "first_name"
            else last
            if kind == "last_name"
            else full_name(first, last, world.locale)
        )
    if kind == "other_person":
        return full_name(*person_name(world, rng), world.locale)
    simple: dict[str, tuple[str, ...]] = {
        "company": p.companies, "street": p.streets, "secondary": p.secondary, "city": p.cities,
        "state": p.states, "country": p.countries, "place": p.cities, "job": p.jobs,
        "department": tuple(_DEPARTMENTS), "team": tuple(_TEAMS), "industry": tuple(_INDUSTRIES),
        "unit": tuple(_UNITS), "weather": tuple(_WEATHER), "allergy": _ALLERGIES, "medication": _MEDICATIONS,
    }  # fmt: skip
    # where a record is: mostly the world's own country (a nationality or a destination is any)
    own = attr.name in ("country", "country_name", "country_code")
    if kind in ("country", "country_code") and own and rng.random() < 0.85:
        gen = faker(world.locale, rng)
        return str(gen.current_country_code() if kind == "country_code" else gen.current_country())
    if kind in simple:
        return rng.choice(simple[kind])
    if kind == "address":
        street = rng.choice(p.streets)
        if entity.attribute("city") is not None:
            return street
        return f"{street}, {rng.choice(p.cities)} {faker(world.locale, rng).postcode()}"
    if kind == "postcode":
        return str(faker(world.locale, rng).postcode())
    if kind == "mac":
        return str(faker("en_US", rng).mac_address())
    if kind == "currency":
        home = _CURRENCY.get(world.locale, "EUR")
        return home if rng.random() < 0.7 else rng.choice(("USD", "EUR", "GBP", "JPY", "CAD", "CHF"))
    providers = {"country_code": "country_code", "language": "language_name", "timezone": "timezone",
                 "color": "color_name", "file_name": "file_name", "mime": "mime_type"}  # fmt: skip
    if kind in providers:
        return str(
            getattr(faker(world.locale if kind == "country_code" else "en_US", rng), providers[kind])()
        )
    if kind == "path":
        return str(faker("en_US", rng).file_path(depth=2))
    if kind == "code":
        code = _code(attr, entity, world, rng)
        if code is not MISSING:
            return code
    if kind == "name" or naming_attr(attr, entity):
        return name_for(attr, entity, world, rng)
    if kind == "slot":
        return slot_label(n, rng)
    if kind == "sort":
        return rng.choice(_SORTS)
    if attr.type == "str" and (known := borrowed_values(n.rsplit(".", 1)[-1], world.domain)):
        return rng.choice(known)  # what a field so named holds in a related domain's system
    if attr.type == "str" and (place := PLACE_ENTITY.search(n)):  # a driver's `home_depot`: "Riverside Depot"
        p = pools(world.locale)
        return f"{rng.choice(p.cities if rng.random() < 0.5 else QUALIFIERS)} {place.group(2).title()}"
    return (
        f"{rng.choice(QUALIFIERS)} {rng.choice(THEMES)}"
        if attr.type == "str"
        else f"{n.replace('_', ' ').capitalize()}."
    )


# Where a thing sits, as storerooms, labs and warehouses label it: "Rack 4", "Box 112", "Shelf C".
_SLOTS = re.compile(
    r"(^|_)(rack|box|shelf|bin|slot|bay|aisle|drawer|cabinet|locker|dock|gate|berth|platform|zone|tier|row"
    r"|level|floor|room|cage|tray|well|lane|stall|pallet_position)$"
)
_SORTS = ("standard", "routine", "special", "general", "custom")


def slot_label(name: str, rng: random.Random) -> str:
    """A storage or place slot named the way people label them: a word and a number or letter."""
    word = re.split(r"_", name)[-1].replace("_", " ")
    if word in ("shelf", "row", "tier", "aisle", "zone", "level"):
        return f"{word.capitalize()} {rng.choice('ABCDEFGH') if rng.random() < 0.5 else rng.randint(1, 12)}"
    if word in ("box", "tray", "bin", "cage"):
        return f"{word.capitalize()} {rng.randint(1, 240)}"
    return f"{word.capitalize()} {rng.randint(1, 24)}"


def _entity_string(
    name: str, entity: EntitySpec, record: Mapping[str, Any], rng: random.Random
) -> str | None:
    """Fields whose meaning depends on what the record is: a flashcard's term and its translation (the
    same card's pair), a version's label, a card's name, a CVE's id, and the values `_BY_ENTITY` lists
    (a lab result's panel, a prescription's dose ...). None elsewhere."""
    if _CARD_ENTITY.search(entity.name):
        if _CARD_TERM.match(name):
            return rng.choice(_CARDS)[0]
        if _CARD_MEANING.match(name):
            term = next(
                (record[k] for k in record if _CARD_TERM.match(k) and isinstance(record[k], str)), None
            )
            return dict(_CARDS).get(term or "") or rng.choice(_CARDS)[1]
    if "version" in entity.name and name in ("label", "name", "version", "version_label", "tag"):
        return f"v{rng.randint(1, 4)}.{rng.randint(0, 9)}"
    if re.fullmatch(r"(name|label|display_name)", name) and re.search(
        r"(^|_)payment_methods?$|(^|_)cards?$", entity.name
    ):
        brand = rng.choice(("Visa", "Mastercard", "Amex", "Visa Debit"))
        return f"{brand} ending {rng.randint(0, 9999):04d}"
    if re.fullmatch(r"(name|cve_id|identifier)", name) and re.search(
        r"(^|_)(cve|vulnerabilit(y|ie))s?$", entity.name
    ):
        return f"CVE-{rng.randint(2019, 2025)}-{rng.randint(1000, 49999)}"
    for owner, field_name, values in _BY_ENTITY:
        if field_name.match(name) and owner.search(entity.name):
            return rng.choice(values)
    return None


_GIVEN = re.compile(r"^(first|given)_?name$")
_FAMILY = re.compile(r"^(last|family|sur)_?name$")
_FULL_NAME = re.compile(r"^(full_?|display_?|contact_?|legal_?)?name$|^[a-z]+_(full_)?name$")
_NAME_SUFFIX = re.compile(r"^(Jr\.?|Sr\.?|I{2,3}|IV|MD|DDS|DVM|PhD|Esq\.?|RN|CPA)$")
EMAIL_KEY = re.compile(r"(^|_)e_?mail(_address)?$")


@cache
def first_names(locale: str) -> frozenset[str]:
    """Every first name the locale's Faker person provider knows (about 700 for en_US), and those the
    schema generator gives the people inside a seed's objects (`values.FIRST`)."""
    from faker import Faker
    from faker.config import AVAILABLE_LOCALES

    # a generator of its own: the thread's (`faker`) draws from the caller's random stream
    gen = Faker(locale if locale in AVAILABLE_LOCALES else "en_US").factories[0]
    known = {
        str(n)
        for p in gen.providers
        if ".person" in type(p).__module__
        for n in getattr(p, "first_names", ())
    }
    return frozenset(known | set(pools(locale).first) | set(FIRST))


def named_person(obj: Mapping[str, Any], locale: str, person: bool = False) -> tuple[str, str] | None:
    """(first, last) of the person a record or object names: its first and last name fields, else a
    name of two or three words ("Daniel Young", "Lori Ann Reyes DDS") that begins with a first name
    of the locale, or with any word where the record is a person's (`person`); None for a team, a
    company or a product ("Spanish Support", "Paperchain Ltd")."""
    given = next((v for k, v in obj.items() if _GIVEN.match(k) and isinstance(v, str) and v.strip()), None)
    family = next((v for k, v in obj.items() if _FAMILY.match(k) and isinstance(v, str) and v.strip()), None)
    if given and family:
        return given.strip(), family.strip()
    firsts = first_names(locale)
    for key, value in obj.items():
        if not (isinstance(value, str) and _FULL_NAME.match(key)):
            continue
        words = [w for w in value.split() if not _NAME_SUFFIX.match(w)]
        shaped = 2 <= len(words) <= 3 and all(w[:1].isupper() and w[1:].isalpha() for w in words)
        if shaped and (person or words[0] in firsts):
            return words[0], words[-1]
    return None


_ORG_MAILBOXES = ("info", "orders", "sales", "accounts", "hello", "contact", "office")
_ORG_SUFFIX = re.compile(r"\b(ltd|llc|inc|co|corp|corporation|company|gmbh|plc|group|limited|llp|sa|ag)\b\.?")


def org_domain(record: Mapping[str, Any]) -> str | None:
    """The web domain an organisation's name gives ("Paperchain Ltd" -> paperchain.com), or None."""
    name = next(
        (record[k] for k in ("name", "company_name", "legal_name", "display_name", "business_name")
         if isinstance(record.get(k), str) and record[k].strip()),
        None,
    )  # fmt: skip
    if name is None:
        return None
    slug = re.sub(r"[^a-z0-9]", "", _ORG_SUFFIX.sub("", _ascii(name).lower()))[:24]
    return f"{slug}.com" if len(slug) >= 3 else None


def email_for(
    world: World,
    rng: random.Random,
    record: Mapping[str, Any],
    person: bool = False,
    domain: str = "",
    who: tuple[str, str] | None = None,
) -> str:
    """An e-mail address of `who`, else of the world's current person, else of the person the record
    names, else of anyone; at `domain` or a free mail domain."""
    p = pools(world.locale)
    first, last = who or world.person or named_person(record, world.locale, person) or person_name(world, rng)
    local = re.sub(r"[^a-z]", "", _ascii(first)), re.sub(r"[^a-z]", "", _ascii(last))
    if not all(local):
        return f"user{rng.randint(100, 9999)}@{rng.choice(p.domains)}"
    style = rng.randint(0, 3)
    name = (
        f"{local[0]}.{local[1]}",
        f"{local[0][0]}{local[1]}",
        f"{local[0]}{rng.randint(1, 99)}",
        f"{local[0]}_{local[1]}",
    )[style]
    return f"{name}@{domain or rng.choice(p.domains)}"


def own_email(obj: dict[str, Any], world: World, rng: random.Random, person: bool = False) -> None:
    """An object that names a person and has an e-mail of someone else's gets one of that person's
    at the same domain ("Daniel Young", diego.lopez6@example.com -> daniel.young@example.com)."""
    who = named_person(obj, world.locale, person)
    if who is None:
        return
    names = [re.sub(r"[^a-z]", "", _ascii(n)) for n in who]
    for key, value in list(obj.items()):
        if not (EMAIL_KEY.search(key) and isinstance(value, str) and value.count("@") == 1):
            continue
        local, domain = value.split("@")
        letters = re.sub(r"[^a-z]", "", local.lower())
        if all(names) and not any(n in letters for n in names):
            obj[key] = email_for(world, rng, obj, domain=domain, who=who)


# ---------------------------------------------------------------- vocabulary entries


def from_vocab(
    entry: VocabEntry, attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random
) -> Any:
    """A value from a vocabulary entry; a list hands out unused values first, then varies them."""
    if entry.kind == "range":
        return from_range(entry, attr, rng)
    if entry.kind == "pattern":
        return regex_string(f"^(?:{entry.pattern})$", rng) or MISSING
    if entry.kind == "faker":
        try:
            return str(getattr(faker(world.locale, rng), entry.faker)())
        except (AttributeError, TypeError):
            return MISSING
    # a sentence with holes ("{skill} scored {score} out of 5") is filled from its own record's fields
    # by `text_for`; drawn here, for a record or an object without them, its holes would show
    values = [v for v in entry.values if not (isinstance(v, str) and HOLE.search(v))]
    if not values:
        return MISSING
    if attr.type in ("int", "float", "money"):
        v = rng.choice(values)
        return money_floor(attr, int(v) if attr.type == "int" else float(v))
    if is_free_text(attr) or not kept_apart(attr, entity, world):
        return rng.choice(values)  # a category (venue, unit, authority) repeats freely
    used = world.used.get((entity.name, attr.name), set())
    fresh = [v for v in values if v not in used]
    if fresh:
        return rng.choice(fresh)
    return vary(rng.choice(values), rng)


def from_group(
    group: LinkedGroup, attr: AttributeSpec, entity: EntitySpec, world: World, rng: random.Random,
    record: dict[str, Any],
) -> Any:  # fmt: skip
    """An attribute's column of the row its record draws from a linked group: the row that agrees with
    the group's values the record already holds, else a row not yet handed out (then any row)."""
    rows = list(group.rows)
    agreeing = _agreeing_rows(group, attr.name, record) or []
    # keyed by the record's id, and holding the record: a record made and dropped during generation
    # frees its id for the next one, which would then inherit a row it never drew (and the run's
    # draws would depend on where the allocator happened to put things)
    held = world.rows_taken.get((id(record), ",".join(group.attrs)))
    taken = held[1] if held is not None and held[0] is record else None
    if taken is not None and taken in agreeing:
        row = taken  # the row this record already drew a column from
    elif agreeing:
        row = rng.choice(agreeing)
    else:
        used = world.used.setdefault((entity.name, "linked:" + ",".join(group.attrs)), set())
        fresh = [r for r in rows if r not in used]
        row = rng.choice(fresh or rows)
        used.add(row)
    world.rows_taken[(id(record), ",".join(group.attrs))] = (record, row)
    value = row[group.column(attr.name)]
    if isinstance(value, VocabEntry):  # the row's own range: a rabbit's weight, not a dog's
        return from_range(value, attr, rng)
    if attr.type in ("int", "float", "money"):
        return money_floor(attr, int(value) if attr.type == "int" else float(value))
    return value


def linked_options(
    world: World, entity: EntitySpec, attr: str, record: Mapping[str, Any], options: Sequence[Any]
) -> list[Any]:
    """Of `options`, those a linked group of the domain's vocabulary allows beside what `record`
    already holds (a species that goes with its breed); all the group lists when it holds none, and
    none when no group links `attr`."""
    group = world.vocab.group(entity.name, attr) if world.vocab is not None else None
    if group is None:
        return []
    column = group.column(attr)
    agreeing = _agreeing_rows(group, attr, record)
    allowed = {r[column] for r in (group.rows if agreeing is None else agreeing)}
    return [v for v in options if v in allowed]


def _agreeing_rows(group: LinkedGroup, attr: str, record: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """The group's rows that agree with the values `record` already holds of the group's other
    attributes; None when it holds none of them."""
    held = [(i, record[a]) for i, a in enumerate(group.attrs) if a != attr and record.get(a) is not None]
    return [r for r in group.rows if all(_cell_holds(r[i], v) for i, v in held)] if held else None


def _cell_holds(cell: Any, value: Any) -> bool:
    """Whether a linked row's cell agrees with a value a record holds (a range holds its numbers)."""
    if isinstance(cell, VocabEntry):
        return isinstance(value, (int, float)) and cell.min <= value <= cell.max
    return bool(cell == value)


# the first word of a value that names a piece of work ("Apply kernel security patches"), which has no
# editions: a second one is a follow-up
_WORK_VERBS = frozenset((
    "add", "adjust", "align", "apply", "approve", "archive", "assess", "audit", "book", "build", "calibrate",
    "check", "clean", "close", "collect", "configure", "confirm", "deploy", "design", "draft", "enable",
    "file", "finalise", "finalize", "fix", "hire", "implement", "improve", "increase", "inspect", "install",
    "interview", "launch", "migrate", "monitor", "move", "order", "organise", "organize", "pay", "plan",
    "prepare", "publish", "reconcile", "reduce", "refresh", "remove", "renew", "repair", "replace",
    "reply", "request", "resolve", "restock", "review", "rotate", "run", "schedule", "send", "service",
    "set", "ship", "submit", "test", "train", "transfer", "update", "upgrade", "validate", "verify",
    "write",
))  # fmt: skip
_FOLLOW_UPS = ("(follow-up)", "(second round)", "(phase two)", "(revisited)")
_SMALL_WORDS = frozenset(("and", "of", "the", "for", "with", "in", "on", "to", "a", "an", "at", "by", "or"))


# a role's title ("Marketing Operations Manager") has seniorities, an event's name ("Clean Beauty Week")
# has seasons' editions; neither has a product's "Max" or "Ultra"
_ROLE = re.compile(
    r"\b(manager|engineer|specialist|analyst|director|coordinator|assistant|officer|technician|designer|"
    r"developer|consultant|administrator|accountant|nurse|scientist|architect|representative|associate|lead)$",
    re.IGNORECASE,
)
_SENIORITY = ("Senior", "Lead", "Junior", "Principal", "Associate")
_EVENT = re.compile(
    r"\b(week|weekend|day|days|sale|festival|summit|conference|launch|campaign|drive|challenge|fair|expo|"
    r"series|night|tour|meetup|workshop|webinar|gala|review|party)$",
    re.IGNORECASE,
)
_SEASONS = ("Spring Edition", "Summer Edition", "Autumn Edition", "Winter Edition", "Encore")
# a room, a store or a site: another one is in another part of the building or the town
_PLACE = re.compile(
    r"\b(store|storeroom|stockroom|room|office|warehouse|depot|wing|hall|site|yard|lab|laboratory|station|"
    r"cent(er|re)|building|floor|bay|dock|cupboard|closet|cabinet|library|branch|studio|kitchen|garage|shed|"
    r"suite|clinic|ward|annex|pantry|store level \d+|level \d+)$",
    re.IGNORECASE,
)
_PARTS = ("North", "South", "East", "West", "Upper", "Lower")
# a hotel, a restaurant or a clinic of a chain: another one is its branch in another part of town
_VENUE = re.compile(
    r"\b(hotel|inn|suites|motel|lodge|resort|hostel|restaurant|cafe|café|bistro|diner|bakery|pharmacy|"
    r"hospital|gym|fitness)$",
    re.IGNORECASE,
)


def editions(value: str) -> list[str]:
    """Other values in `value`'s style, for when a list runs out or a look-alike is wanted: a role at
    another seniority ("Senior Marketing Operations Manager"), an event's other edition ("Clean Beauty
    Week Spring Edition"), a follow-up of a piece of work ("Apply kernel security patches (follow-up)"),
    a place in another part of its building or town ("North Warehouse Office Store"), a chain's branch
    ("Riverside Inn & Suites Airport"), a product's edition
    ("Trail Runner Pro"); never a number."""
    words = value.split()
    lower = any(w.isalpha() and w.islower() and w not in _SMALL_WORDS for w in words[1:])
    # "Apply kernel security patches", "Policy and regulation analysis"; not "Clean Beauty Week"
    if lower and (words[0].lower() in _WORK_VERBS or len(words) >= 3):
        return [f"{value} {f}" for f in _FOLLOW_UPS]
    if _ROLE.search(value) and words[0] not in _SENIORITY:
        return [f"{s} {value}" for s in _SENIORITY]
    if _EVENT.search(value):
        return [f"{value} {e}" for e in _SEASONS]
    town, _, area = value.rpartition(" ")
    if town and area in _AREAS:  # a business's site: the same town's other parts ("Boise Airport")
        return [f"{town} {a}" for a in _AREAS if a != area]
    if _VENUE.search(value):  # "Riverside Inn & Suites Airport", not "Riverside Inn & Suites Elite"
        return [f"{value} {a}" for a in _AREAS if a.lower() not in value.lower()]
    if _PLACE.search(value):  # "North Warehouse Office Store", not "Warehouse Office Store Deluxe"
        return [f"{p} {value}" for p in _PARTS if p.lower() not in value.lower()] + [f"{value} Annex"]
    return [f"{value} {v}" for v in VARIANT_WORDS if v.lower() not in value.lower()]


def vary(value: str, rng: random.Random) -> str:
    """Another value in the same style when a list runs out (`editions`)."""
    return rng.choice(editions(value) or [f"{value} {rng.choice(VARIANT_WORDS)}"])


# ---------------------------------------------------------------- free text about its record

_TEMPLATES: dict[str, list[str]] = {
    "review_good": [
        "Great experience with {label}; everything went smoothly and I would recommend it.",
        "Rated {rating} out of 5: fast, friendly and exactly as described.",
        "Really happy with {label}. Staff were helpful from start to finish.",
        "Excellent value for {amount}, will book again.",
        "Five stars from me, the {entity} was well organised and on time.",
    ],
    "review_mixed": [
        "Rated {rating} out of 5: decent overall, but the wait was longer than promised.",
        "{label} was fine, though communication could have been clearer.",
        "Average experience; the price of {amount} felt a little high for what we got.",
        "Some good points, some rough edges. Would consider {label} again if it improves.",
    ],
    "review_bad": [
        "Rated {rating} out of 5: disappointing, nobody followed up after I complained.",
        "Not happy with {label}; the {entity} was late and the details were wrong.",
        "Poor value for {amount}. I asked for a refund and am still waiting.",
        "Would not recommend. Problems were raised twice and never fixed.",
    ],
    "reason": [
        "Entered twice by mistake; this {entity} is the duplicate.",
        "Raised during the periodic review of this {entity}.",
        "Requested by {person} ahead of the {date} deadline.",
        "Moved to {status} after review; supporting documents were incomplete.",
        "Budget for {label} was cut this quarter.",
        "Amount of {amount} exceeds the approval limit, needs a second sign-off.",
        "Details on the {entity} did not match the supporting records.",
        "Policy requires this for every {entity} above the threshold.",
        "Information provided by {person} did not match our records.",
        "Priority raised after repeated complaints about {label}.",
    ],
    "instructions": [
        "Read the history of this {entity} first; call {person} with any questions.",
        "Confirm the details with {person} before starting.",
        "Record any deviation on the {entity} before closing it.",
        "Work through the checklist in order and sign off each step.",
        "Check the previous {entity} notes before proceeding, then update the status.",
        "Complete by {date} and send the confirmation to the requester.",
        "Photograph the result and attach it to the record when done.",
        "Do not proceed until the {amount} payment has cleared.",
    ],
    "description": [
        "{label}: {a_status} {entity} handled by {person}.",
        "{label} covers the work agreed with {person}, valued at {amount}.",
        "{label} was set up on {date} and is currently {status}.",
        "Standard {entity} for {person}; see the attached terms for details.",
        "{label}, reviewed and {status}; next checkpoint on {date}.",
        "Covers scope, timeline and costs ({amount}) for {label}.",
    ],
    "note": [
        "Spoke with {person}; they confirmed everything for {date}.",
        "{label} is {status}. Waiting on paperwork before the next step.",
        "Called {person} twice, left a voicemail; will try again tomorrow.",
        "Payment of {amount} received and matched to {label}.",
        "Follow up with {person} about {label} by {date}.",
        "Checked the {entity} against the file; nothing further needed for now.",
        "Flagged for review: figures on {label} do not add up.",
        "Updated after the meeting with {person}; status set to {status}.",
        "Reviewed with {person}; no changes needed to the {entity}.",
        "Looked over the {entity} today; all in order.",
        "Second pair of eyes on this {entity}: no concerns.",
        "Keep for the next review of the {entity}.",
        "Wording tidied on the {entity}; the substance is unchanged.",
        "Documents scanned and filed under {label}.",
        "Escalated to the team lead, response expected by {date}.",
        "Minor discrepancy of {amount} noted; corrected in the ledger.",
    ],
}


def _kind(attr_name: str, entity_name: str = "") -> str:
    n = attr_name
    if re.search(r"review|feedback|testimonial|rating_comment", n) or (
        re.search(r"review|feedback|testimonial|survey_response", entity_name)
        and re.search(r"comment|text|body|content|note", n)
    ):
        return "review"
    if re.search(r"reason|justification|rationale|why|explanation|cause", n):
        return "reason"
    if re.search(r"instruction|direction|steps|preconditions|procedure|how_to", n):
        return "instructions"
    if re.search(r"description|summary|details|about|overview|bio|statement|objective|scope|content|body", n):
        return "description"
    return "note"


def _money(value: float, currency: str) -> str:
    symbol = _SYMBOL.get(currency)
    return f"{symbol}{value:,.2f}" if symbol else f"{value:,.2f} {currency}"


def _when(value: str) -> str:
    m = moment_of(value)
    return f"{m:%B} {m.day}" if m is not None else value


def slots(entity: EntitySpec, record: dict[str, Any], world: World, target_label: Any) -> dict[str, str]:
    """What a sentence may say about a record: its label, status, a person, an amount, a date..."""
    out: dict[str, str] = {"entity": entity.name.replace("_", " ")}
    label = entity.label_attribute
    if label is not None and not is_free_text(label) and isinstance(record.get(label.name), str):
        out["label"] = record[label.name]
    status = entity.status_attribute
    if status is not None and isinstance(record.get(status.name), str):
        out["status"] = record[status.name].replace("_", " ")
        out["a_status"] = article(out["status"])  # "an active item listing", not "a active"
    currency = (
        record.get("currency")
        if isinstance(record.get("currency"), str)
        else _CURRENCY.get(world.locale, "USD")
    )
    for a in entity.attributes:
        v = record.get(a.name)
        if v is None or a.name == entity.key:
            continue
        if (
            "person" not in out
            and a.type == "str"
            and (
                PERSON_ROLE_ATTR.search(a.name)
                or re.search(r"full_?name|contact_name", a.name)
                or (is_person(entity) and a.name == "name")
            )
        ):
            out["person"] = str(v)
        elif "amount" not in out and a.type == "money" and isinstance(v, (int, float)) and v:
            out["amount"] = _money(float(v), str(currency))  # never "charged $0.00 for ..."
        elif "date" not in out and a.type in ("date", "datetime") and isinstance(v, str):
            out["date"] = _when(v)
        elif "rating" not in out and re.search(r"rating|stars|score", a.name) and isinstance(v, (int, float)):
            out["rating"] = written_number(float(v))
        elif a.type == "ref":
            found = target_label(a, v)
            if found:
                out.setdefault("person" if (a.ref and person_entity(a.ref)) else "label", found)
    return out


def _render(sentence: str, values: dict[str, str]) -> str | None:
    names = re.findall(r"\{([a-z_]+)\}", sentence)
    if any(n not in values for n in names):
        return None
    # "a {risk} model" with risk "aggressive" is "an aggressive model"
    said = re.sub(
        r"\b([Aa])n? \{([a-z_]+)\}", lambda m: _with_article(m.group(1), values[m.group(2)]), sentence
    )
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], said)


def _with_article(a: str, value: str) -> str:
    """`value` after the article its sound takes, in the case the sentence wrote it in."""
    said = article(value) if value else f"a {value}"
    return said[:1].upper() + said[1:] if a == "A" else said


def retell(world: World, state: Mapping[str, Any], keep: Callable[[EntitySpec, str, str], bool]) -> None:
    """Write each free text told from its record's fields again from the record as `state` holds it
    now ("Out February 12, back February 13", never the dates drawn before the rental's were put in
    order). A text a later pass replaced stays; `keep(entity, attribute, text)` says whether the
    new text is one the attribute takes."""
    latest: dict[tuple[str, str, str], tuple[str, EntitySpec, Any]] = {}
    for drawn, name, sentence, entity, look in world.told:
        # a record redrawn for a uniqueness rule keeps its key: its last draw is the one kept
        latest[(entity.table, str(drawn.get(entity.key)), name)] = (sentence, entity, look)
    for (table, key, name), (sentence, entity, look) in latest.items():
        record = (state.get(table) or {}).get(key)
        if not isinstance(record, dict):
            continue  # a record left out of the state
        said = _render(sentence, field_values(entity, record, world, look))
        if said is None or said == record.get(name):
            continue
        if _render_was(sentence, record.get(name)) and keep(entity, name, said):
            record[name] = said


def _render_was(sentence: str, text: Any) -> bool:
    """Whether `text` is `sentence` rendered with some values (not a text a later pass put there)."""
    if not isinstance(text, str):
        return False
    parts = re.split(r"\{[a-z_]+\}", sentence)
    if not "".join(parts).strip(" .,;:"):
        return False  # a sentence of fields alone would match any text
    pattern = ".+?".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, text, re.DOTALL) is not None


def field_values(
    entity: EntitySpec, record: dict[str, Any], world: World, target_label: Any
) -> dict[str, str]:
    """Each attribute of the record as a sentence would write it (for `{attr}` in vocabulary sentences)."""
    currency = (
        record.get("currency")
        if isinstance(record.get("currency"), str)
        else _CURRENCY.get(world.locale, "USD")
    )
    out: dict[str, str] = {}
    for a in entity.attributes:
        v = record.get(a.name)
        if v is None or a.name == entity.key or is_free_text(a):
            continue
        if a.type == "ref":
            found = target_label(a, v)
            if found:
                out[a.name] = found
        elif a.type == "enum" and isinstance(v, str):
            out[a.name] = v.replace("_", " ")
        elif a.type == "money" and isinstance(v, (int, float)):
            if v:  # a sentence about an amount of nothing reads as a slip: another one is chosen
                out[a.name] = _money(float(v), str(currency))
        elif a.type in ("date", "datetime") and isinstance(v, str):
            out[a.name] = _when(v)
        elif isinstance(v, bool):
            out[a.name] = "yes" if v else "no"
        elif isinstance(v, (str, int, float)):
            out[a.name] = written_number(v) if isinstance(v, float) else str(v)
    return out


def text_for(
    attr: AttributeSpec,
    entity: EntitySpec,
    world: World,
    rng: random.Random,
    record: dict[str, Any],
    target_label: Any = None,
) -> str:
    """Free text about its record, written after the record's other fields."""
    look = target_label or (lambda a, v: None)
    entry = world.entry(entity.name, attr.name)
    if entry is not None and entry.kind == "list":
        fields = field_values(entity, record, world, look)
        options = list(entry.values)
        rng.shuffle(options)
        for sentence in options:
            said = _render(str(sentence), fields)
            if said is not None:
                if "{" in str(sentence):
                    world.told.append((record, attr.name, str(sentence), entity, look))
                return said
    named = kind_value(attr.name, entity.name, world, rng)
    if named is not None:  # what such a field says in any domain: a transaction's memo "Groceries"
        return named
    values = slots(entity, record, world, look)
    kind = _kind(attr.name, entity.name)
    if kind == "review":
        rating = next(
            (float(v) for a in entity.attributes if re.search(r"rating|stars|score", a.name)
             if isinstance(v := record.get(a.name), (int, float)) and not isinstance(v, bool)),
            None,
        )  # fmt: skip
        mood = (
            "review_mixed"
            if rating is None
            else "review_good"
            if rating >= 4
            else "review_bad"
            if rating < 2.5
            else "review_mixed"
        )
        templates = _TEMPLATES[mood]
    else:
        templates = _TEMPLATES[kind]
    options = [s for t in templates if (s := _render(t, values)) is not None]
    if not options:
        options = [s for t in _TEMPLATES["note"] if (s := _render(t, values)) is not None]
    return rng.choice(options) if options else "No further remarks."


# ---------------------------------------------------------------- the one entry point


def semantic_value(
    attr: AttributeSpec,
    entity: EntitySpec,
    rng: random.Random,
    index: int,
    world: World | None = None,
    record: dict[str, Any] | None = None,
    target_label: Any = None,
) -> Any:
    """A meaningful value for an attribute, or MISSING where this module has no opinion (enums,
    booleans, lists, objects, keys and references are the caller's)."""
    world = world if world is not None else World()
    record = record if record is not None else {}
    t = attr.type
    entry = world.entry(entity.name, attr.name)
    group = world.vocab.group(entity.name, attr.name) if world.vocab is not None else None
    if group is not None and t in ("str", "text", "int", "float", "money", "enum"):
        value = from_group(group, attr, entity, world, rng, record)
        if t in ("str", "text") and kept_apart(attr, entity, world):
            used = world.used.setdefault((entity.name, attr.name), set())
            base = str(value)
            for _ in range(40):  # rows ran out: an edition of the name, never a number
                if value not in used:
                    break
                value = vary(base, rng)
            used.add(value)
        return value
    if t in ("str", "text"):
        if is_free_text(attr):
            return text_for(attr, entity, world, rng, record, target_label)
        value = from_vocab(entry, attr, entity, world, rng) if entry is not None else MISSING
        if value is MISSING:
            value = _named_after(attr, entity, world, rng)
        if value is MISSING:
            value = string_for(attr, entity, world, rng, record)
        if value is not MISSING and kept_apart(attr, entity, world):
            used = world.used.setdefault((entity.name, attr.name), set())
            for _ in range(8):
                if value not in used:
                    break
                again = from_vocab(entry, attr, entity, world, rng) if entry is not None else MISSING
                value = again if again is not MISSING else string_for(attr, entity, world, rng, record)
            base = str(value)
            for _ in range(40):  # an edition of the value, then an edition of an edition
                if value not in used:
                    break
                value = vary(base, rng)
                base = value if rng.random() < 0.2 else base
            used.add(value)
        return value
    if t in ("int", "float", "money"):
        if entry is not None and entry.kind in ("range", "list"):
            return from_vocab(entry, attr, entity, world, rng)
        return number_for(attr, rng, entity.name)
    if t in ("date", "datetime"):
        return date_for(attr, entity, rng)
    return MISSING
