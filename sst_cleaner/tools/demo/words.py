"""Word lists for the demo site's generated prose (written for this package).

The prose vocabulary is kept apart from the site furniture (navigation, ads, footer), so a
test can tell template text from article text by its words alone.
"""

NOUNS = """harbour orchard bridge library council meadow engineer glacier ferry festival lantern
museum harvest canal quarry workshop vineyard lighthouse tram archive observatory market
village reservoir garden kiln loom foundry pier mill cathedral river valley ridge island
forest estuary laboratory orchestra school clinic bakery railway tunnel granary courtyard
chapel terrace windmill beacon aqueduct monastery fishery studio printer sculptor potter
farmer geologist botanist surveyor midwife carpenter mason weaver brewer cartographer
teacher mayor nurse captain pilot baker painter""".split()

ADJECTIVES = """ancient quiet sudden modest narrow restored coastal remote seasonal crowded
northern southern eastern western patient careful stubborn generous fragile sturdy
unexpected rainy frozen golden weathered ambitious cautious curious humble lively
wooden copper granite hidden familiar distant gradual steady rural volcanic tidal
mossy brittle crooked spacious thriving neglected""".split()

VERBS_PAST = """rebuilt measured repaired surveyed mapped restored reopened expanded studied
painted planted harvested described documented recorded catalogued questioned inspected
welcomed celebrated delayed financed designed drained flooded sheltered lifted carried
opened closed trimmed replaced polished""".split()

VERBS_PRESENT = """change grow travel survive recover endure flourish gather shift settle
wander return""".split()

ADVERBS = """slowly quietly eventually suddenly carefully reluctantly steadily patiently
gradually briefly cheerfully stubbornly""".split()

PLACES = """Aldermoor Bressingham Calloway Dunmere Elsworth Farrowdale Glenhollow Harwick
Istmere Kettering Larkspur Merrowby Northfold Ostrava Pellmarsh Quenby Rydal Saltmarsh
Thornbury Ulverstone Wexcombe Yarrowfield""".split()

FIRST_NAMES = """Amara Bastian Celine Dorian Elif Farid Greta Hiroshi Ines Jonah Katya Lucan
Mirela Nikolai Oona Pavel Quinn Rosalind Soren Talia Umberto Vera Wendell Ximena Yusuf
Zelda""".split()

LAST_NAMES = """Achterberg Birchwood Castellano Drummond Eriksen Fairbairn Gallagher Holloway
Ibarra Jankowski Kowalczyk Lindqvist Montague Nakamura Okonkwo Pemberton Quilliam
Rasmussen Sandoval Thistlewood Underhill Valdivia Whitlock Yamamoto""".split()

ROLES = """historian resident volunteer researcher official shopkeeper fisherman gardener
councillor engineer guide""".split()

ORGS = """the regional trust|the harbour authority|the county archive|the valley cooperative|
the rural survey|the university field station""".replace("\n", "").split("|")

MONTHS = """January February March April May June July August September October November
December""".split()

NUMBERS = """two three four five six seven eight nine eleven twelve fifteen twenty forty""".split()

# -- site furniture (never used by the prose) ------------------------------------------------
SITE_NAME = "The Morning Ledger"

SECTIONS = [
    ("science", "Science"),
    ("travel", "Travel"),
    ("food", "Food"),
    ("economy", "Economy"),
    ("culture", "Culture"),
    ("sport", "Sport"),
]

ADS = [
    "Zephyr noise cancelling headphones now forty percent off, limited offer",
    "Open a Brightpath savings account in five minutes with no fees",
    "Luxora smart thermostats: cut your heating bill this winter",
    "Book your Solstice Cruises getaway today and kids sail free",
    "Try Crumbly Oat Bars: twelve flavours, zero compromise",
]

FOOTER_LINKS = ["About us", "Contact", "Careers", "Terms of use", "Privacy policy", "Advertise with us"]
