"""Word lists and an invented-sentence builder for the text families.

Written for this package: common English words and sentences assembled from
them at random, so no benchmark or dataset text can end up in a task. All
words are lower-case ASCII letters only, which keeps "letter" and "word"
unambiguous (no hyphens, apostrophes or digits inside a word).
"""

from __future__ import annotations

from generators.rng import HashRng

NOUNS = (
    "apple",
    "anchor",
    "answer",
    "arrow",
    "baker",
    "balloon",
    "banana",
    "basket",
    "beacon",
    "bicycle",
    "blanket",
    "bottle",
    "bridge",
    "bubble",
    "bucket",
    "butter",
    "button",
    "cabbage",
    "camera",
    "candle",
    "canyon",
    "carpet",
    "castle",
    "cellar",
    "cherry",
    "chimney",
    "circle",
    "cliff",
    "clock",
    "cloud",
    "coffee",
    "collar",
    "comet",
    "cookie",
    "copper",
    "cottage",
    "cotton",
    "crayon",
    "dancer",
    "desert",
    "dinner",
    "doctor",
    "donkey",
    "dragon",
    "drawer",
    "eagle",
    "engine",
    "farmer",
    "feather",
    "fence",
    "ferry",
    "fiddle",
    "forest",
    "fountain",
    "garden",
    "giraffe",
    "glass",
    "grocer",
    "guitar",
    "hammer",
    "harbor",
    "helmet",
    "hill",
    "honey",
    "island",
    "jacket",
    "jelly",
    "kettle",
    "kitten",
    "ladder",
    "lantern",
    "lemon",
    "letter",
    "library",
    "lizard",
    "meadow",
    "melon",
    "mirror",
    "mitten",
    "monkey",
    "morning",
    "mountain",
    "muffin",
    "needle",
    "orange",
    "otter",
    "paddle",
    "painter",
    "parrot",
    "pebble",
    "pencil",
    "pepper",
    "pillow",
    "pirate",
    "planet",
    "pocket",
    "potato",
    "puddle",
    "puppet",
    "rabbit",
    "raccoon",
    "ribbon",
    "river",
    "rocket",
    "saddle",
    "sailor",
    "salmon",
    "school",
    "scissors",
    "shadow",
    "shelf",
    "shovel",
    "silver",
    "spoon",
    "squirrel",
    "staircase",
    "station",
    "strawberry",
    "street",
    "summer",
    "sunset",
    "sweater",
    "teacher",
    "teapot",
    "thimble",
    "thunder",
    "ticket",
    "tiger",
    "tomato",
    "tractor",
    "traveler",
    "treasure",
    "tunnel",
    "turtle",
    "umbrella",
    "valley",
    "violin",
    "wagon",
    "walnut",
    "window",
    "winter",
    "wizard",
    "yellow",
    "zipper",
    "bookkeeper",
    "committee",
    "possession",
    "assessment",
    "mississippi",
    "accommodation",
    "balloonist",
    "coffeepot",
    "gardener",
    "referee",
    "raspberry",
    "blueberry",
    "butterfly",
    "grasshopper",
    "woodpecker",
    "typewriter",
    "lighthouse",
    "watermelon",
    "pineapple",
    "hippopotamus",
    "caterpillar",
    "kangaroo",
    "cinnamon",
    "spaghetti",
    "broccoli",
    "marshmallow",
    "parallelogram",
    "occurrence",
    "embarrassment",
    "programmer",
    "engineer",
    "millennium",
    "peppermint",
    "tennessee",
    "aardvark",
    "bookshelf",
    "classroom",
    "doorbell",
    "goalkeeper",
)

ADJECTIVES = (
    "ancient",
    "bitter",
    "bright",
    "brave",
    "busy",
    "calm",
    "careful",
    "cheerful",
    "clever",
    "cold",
    "curious",
    "dusty",
    "eager",
    "early",
    "empty",
    "fancy",
    "fierce",
    "gentle",
    "giant",
    "golden",
    "green",
    "happy",
    "heavy",
    "hollow",
    "honest",
    "humble",
    "hungry",
    "jolly",
    "kind",
    "lazy",
    "little",
    "lonely",
    "loud",
    "lucky",
    "merry",
    "muddy",
    "narrow",
    "noisy",
    "old",
    "orange",
    "patient",
    "polite",
    "proud",
    "purple",
    "quiet",
    "rapid",
    "rusty",
    "sandy",
    "shiny",
    "silent",
    "silly",
    "sleepy",
    "slow",
    "small",
    "smooth",
    "soft",
    "sparkling",
    "steady",
    "sticky",
    "stormy",
    "strange",
    "sunny",
    "sweet",
    "tall",
    "tiny",
    "tired",
    "wandering",
    "warm",
    "wild",
    "windy",
    "wise",
    "wooden",
    "yellow",
    "young",
    "striped",
    "spotted",
    "crooked",
    "brilliant",
    "peaceful",
)

PEOPLE = (
    "baker",
    "farmer",
    "sailor",
    "teacher",
    "doctor",
    "painter",
    "gardener",
    "traveler",
    "grocer",
    "dancer",
    "pilot",
    "student",
    "neighbor",
    "musician",
    "carpenter",
    "fisherman",
    "librarian",
    "shepherd",
    "inventor",
    "mechanic",
    "poet",
    "referee",
    "engineer",
    "programmer",
    "wizard",
)

TRANSITIVE_VERBS = (
    "carried",
    "painted",
    "found",
    "watched",
    "fixed",
    "opened",
    "cleaned",
    "borrowed",
    "polished",
    "counted",
    "measured",
    "followed",
    "packed",
    "lifted",
    "dropped",
    "pushed",
    "pulled",
    "filled",
    "emptied",
    "sketched",
    "repaired",
    "noticed",
    "collected",
    "wrapped",
    "chased",
    "visited",
    "admired",
    "tested",
    "sorted",
    "guarded",
)

INTRANSITIVE_VERBS = (
    "waited",
    "laughed",
    "rested",
    "sang",
    "wandered",
    "slept",
    "danced",
    "listened",
    "paused",
    "whistled",
    "smiled",
    "hurried",
    "stretched",
    "shivered",
    "worked",
    "looked around",
    "sat down",
)

PREPOSITIONS = (
    "near",
    "behind",
    "under",
    "beside",
    "across",
    "past",
    "around",
    "above",
    "below",
    "inside",
    "outside",
    "along",
    "beyond",
    "toward",
)

DETERMINERS = ("the", "a", "one", "every", "my", "her", "his", "our", "their", "that", "this")

ADVERBS = (
    "quietly",
    "slowly",
    "quickly",
    "carefully",
    "happily",
    "early",
    "again",
    "twice",
    "today",
    "yesterday",
    "calmly",
    "eagerly",
    "gladly",
    "patiently",
    "suddenly",
)

CONJUNCTIONS = ("and", "but", "while", "before", "after", "because", "so", "until", "although")


def noun_phrase(rng: HashRng, *, people: bool = False) -> list[str]:
    """'the old mill' or 'a kitten': a determiner, maybe an adjective, a noun."""
    words = [rng.choice(DETERMINERS)]
    if rng.chance(1, 2):
        words.append(rng.choice(ADJECTIVES))
    words.append(rng.choice(PEOPLE if people else NOUNS))
    if words[0] == "a" and words[1][0] in "aeiou":
        words[0] = "an"
    return words


def clause(rng: HashRng) -> list[str]:
    """One clause: a subject, a verb, maybe an object, a place and an adverb."""
    words = noun_phrase(rng, people=True)
    if rng.chance(2, 3):
        words.append(rng.choice(TRANSITIVE_VERBS))
        words += noun_phrase(rng)
    else:
        words += rng.choice(INTRANSITIVE_VERBS).split()
    if rng.chance(1, 2):
        words.append(rng.choice(PREPOSITIONS))
        words += noun_phrase(rng)
    if rng.chance(1, 3):
        words.append(rng.choice(ADVERBS))
    return words


def sentence_words(rng: HashRng, clauses: int) -> list[str]:
    """Lower-case words of an invented sentence of `clauses` joined clauses (no punctuation)."""
    words = clause(rng)
    for _ in range(clauses - 1):
        words.append(rng.choice(CONJUNCTIONS))
        words += clause(rng)
    return words


def sentence(rng: HashRng, clauses: int) -> str:
    """An invented sentence, capitalized, commas before conjunctions, ending with a period."""
    words = sentence_words(rng, clauses)
    out: list[str] = []
    for i, word in enumerate(words):
        if word in CONJUNCTIONS and i > 0 and rng.chance(1, 2):
            out[-1] += ","
        out.append(word)
    out[0] = out[0].capitalize()
    return " ".join(out) + "."


def phrase(rng: HashRng, min_words: int, max_words: int) -> str:
    """A lower-case phrase of adjectives and nouns, e.g. 'sleepy purple dragon'."""
    count = rng.randint(min_words, max_words)
    words = [rng.choice(ADJECTIVES) for _ in range(count - 1)] + [rng.choice(NOUNS)]
    return " ".join(words)
