"""Real places for the locales whose Faker cities are made up ("West Davidmouth", "Terencefort").

A city comes with where it is: its state or nation and the start of its postcodes, so that a record's
city, state and postcode name one place ("Denver", "CO", "80218"), and a name that mentions a city
("Kryterion Denver") can be placed there. The facts are public geography; the lists are ours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class City:
    name: str
    region: str  # state (US) or nation (UK)
    region_code: str  # "CO"; the nation's own name in the UK
    postcode: str  # US: the first three digits of its ZIP codes; UK: its postcode area


_US = [
    ("New York", "New York", "NY", "100"), ("Brooklyn", "New York", "NY", "112"), ("Buffalo", "New York", "NY", "142"),
    ("Rochester", "New York", "NY", "146"), ("Los Angeles", "California", "CA", "900"),
    ("San Diego", "California", "CA", "921"), ("San Jose", "California", "CA", "951"),
    ("San Francisco", "California", "CA", "941"), ("Sacramento", "California", "CA", "958"),
    ("Fresno", "California", "CA", "937"), ("Oakland", "California", "CA", "946"), ("Chicago", "Illinois", "IL", "606"),
    ("Springfield", "Illinois", "IL", "627"), ("Houston", "Texas", "TX", "770"), ("Dallas", "Texas", "TX", "752"),
    ("Austin", "Texas", "TX", "787"), ("San Antonio", "Texas", "TX", "782"), ("El Paso", "Texas", "TX", "799"),
    ("Fort Worth", "Texas", "TX", "761"), ("Phoenix", "Arizona", "AZ", "850"), ("Tucson", "Arizona", "AZ", "857"),
    ("Philadelphia", "Pennsylvania", "PA", "191"), ("Pittsburgh", "Pennsylvania", "PA", "152"),
    ("Jacksonville", "Florida", "FL", "322"), ("Miami", "Florida", "FL", "331"), ("Tampa", "Florida", "FL", "336"),
    ("Orlando", "Florida", "FL", "328"), ("Columbus", "Ohio", "OH", "432"), ("Cleveland", "Ohio", "OH", "441"),
    ("Cincinnati", "Ohio", "OH", "452"), ("Charlotte", "North Carolina", "NC", "282"),
    ("Raleigh", "North Carolina", "NC", "276"), ("Indianapolis", "Indiana", "IN", "462"),
    ("Seattle", "Washington", "WA", "981"), ("Spokane", "Washington", "WA", "992"), ("Denver", "Colorado", "CO", "802"),
    ("Boulder", "Colorado", "CO", "803"), ("Washington", "District of Columbia", "DC", "200"),
    ("Boston", "Massachusetts", "MA", "021"), ("Worcester", "Massachusetts", "MA", "016"),
    ("Nashville", "Tennessee", "TN", "372"), ("Memphis", "Tennessee", "TN", "381"), ("Detroit", "Michigan", "MI", "482"),
    ("Grand Rapids", "Michigan", "MI", "495"), ("Portland", "Oregon", "OR", "972"), ("Eugene", "Oregon", "OR", "974"),
    ("Las Vegas", "Nevada", "NV", "891"), ("Reno", "Nevada", "NV", "895"), ("Louisville", "Kentucky", "KY", "402"),
    ("Baltimore", "Maryland", "MD", "212"), ("Milwaukee", "Wisconsin", "WI", "532"), ("Madison", "Wisconsin", "WI", "537"),
    ("Albuquerque", "New Mexico", "NM", "871"), ("Kansas City", "Missouri", "MO", "641"),
    ("St. Louis", "Missouri", "MO", "631"), ("Atlanta", "Georgia", "GA", "303"), ("Savannah", "Georgia", "GA", "314"),
    ("Omaha", "Nebraska", "NE", "681"), ("Minneapolis", "Minnesota", "MN", "554"), ("St. Paul", "Minnesota", "MN", "551"),
    ("Tulsa", "Oklahoma", "OK", "741"), ("Oklahoma City", "Oklahoma", "OK", "731"),
    ("New Orleans", "Louisiana", "LA", "701"), ("Salt Lake City", "Utah", "UT", "841"),
    ("Richmond", "Virginia", "VA", "232"), ("Virginia Beach", "Virginia", "VA", "234"), ("Boise", "Idaho", "ID", "837"),
    ("Des Moines", "Iowa", "IA", "503"), ("Providence", "Rhode Island", "RI", "029"),
    ("Hartford", "Connecticut", "CT", "061"), ("New Haven", "Connecticut", "CT", "065"),
    ("Anchorage", "Alaska", "AK", "995"), ("Honolulu", "Hawaii", "HI", "968"),
    ("Charleston", "South Carolina", "SC", "294"), ("Burlington", "Vermont", "VT", "054"),
    ("Newark", "New Jersey", "NJ", "071"), ("Birmingham", "Alabama", "AL", "352"), ("Little Rock", "Arkansas", "AR", "722"),
    ("Wichita", "Kansas", "KS", "672"), ("Fargo", "North Dakota", "ND", "581"), ("Sioux Falls", "South Dakota", "SD", "571"),
    ("Billings", "Montana", "MT", "591"), ("Cheyenne", "Wyoming", "WY", "820"), ("Manchester", "New Hampshire", "NH", "031"),
    ("Wilmington", "Delaware", "DE", "198"), ("Jackson", "Mississippi", "MS", "392"),
]  # fmt: skip

_UK = [
    ("London", "England", "England", "SE"), ("Manchester", "England", "England", "M"),
    ("Birmingham", "England", "England", "B"), ("Leeds", "England", "England", "LS"),
    ("Liverpool", "England", "England", "L"), ("Bristol", "England", "England", "BS"),
    ("Sheffield", "England", "England", "S"), ("Newcastle upon Tyne", "England", "England", "NE"),
    ("Nottingham", "England", "England", "NG"), ("Leicester", "England", "England", "LE"),
    ("Brighton", "England", "England", "BN"), ("Oxford", "England", "England", "OX"),
    ("Cambridge", "England", "England", "CB"), ("York", "England", "England", "YO"), ("Bath", "England", "England", "BA"),
    ("Norwich", "England", "England", "NR"), ("Southampton", "England", "England", "SO"),
    ("Coventry", "England", "England", "CV"), ("Exeter", "England", "England", "EX"),
    ("Reading", "England", "England", "RG"), ("Glasgow", "Scotland", "Scotland", "G"),
    ("Edinburgh", "Scotland", "Scotland", "EH"), ("Aberdeen", "Scotland", "Scotland", "AB"),
    ("Dundee", "Scotland", "Scotland", "DD"), ("Cardiff", "Wales", "Wales", "CF"), ("Swansea", "Wales", "Wales", "SA"),
    ("Belfast", "Northern Ireland", "Northern Ireland", "BT"),
]  # fmt: skip

CITIES: dict[str, tuple[City, ...]] = {
    "en_US": tuple(City(*c) for c in _US),
    "en_GB": tuple(City(*c) for c in _UK),
}


def real_cities(locale: str) -> tuple[City, ...]:
    """The real cities of `locale`, or () where Faker's own cities are real (de_DE, ja_JP)."""
    return CITIES.get(locale, ())


def city_named(locale: str, name: str) -> City | None:
    return next((c for c in real_cities(locale) if c.name == name), None)


def city_in(text: str, locale: str) -> City | None:
    """The real city a text mentions as a word ("Kryterion Denver" -> Denver), the longest first."""
    for city in sorted(real_cities(locale), key=lambda c: -len(c.name)):
        at = text.find(city.name)
        end = at + len(city.name)
        if (
            at >= 0
            and (at == 0 or not text[at - 1].isalnum())
            and (end == len(text) or not text[end].isalnum())
        ):
            return city
    return None


def postcode(city: City, locale: str, rng: random.Random) -> str:
    """A postcode of `city`: a ZIP code that starts as its do ("80218"), or a UK postcode of its area
    ("M14 5RT")."""
    if locale == "en_GB":
        letters = "ABDEFGHJLNPQRSTUWXYZ"
        return f"{city.postcode}{rng.randint(1, 20)} {rng.randint(1, 9)}{rng.choice(letters)}{rng.choice(letters)}"
    return f"{city.postcode}{rng.randint(1, 99):02d}"
