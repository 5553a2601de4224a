"""Answer presentations for the verifier's property suite, their truth known by construction.

    from tests.verify.presentations import presentations
    @given(presentations())
    def test_never_the_opposite(case): ...

A presentation is an output built on five axes, each a class the suite reports coverage by:

- `marker`: how the answer is introduced -- an answer marker of one of 21 languages, before ASCII or
  full-width punctuation (`Answer:`, `答案：`, `Réponse :`), a copula sentence ("The answer is",
  "Die Antwort ist", "答案是"), none (a bare value, a bold line, a box), a last sentence opened by a
  concluding word of its language ("Por lo tanto, ...", "Таким образом, ..."), or a closing
  paragraph of one line that states the value with neither;
- `wrapper`: what holds the value -- plain, bold, a heading over it, a quoted line or block, a
  fenced or triple-quoted block, `\\boxed{}`, an answer tag, a JSON field, a table row;
- `position`: where the answer stands -- last, first with the explanation after it, followed by a
  check or a rating, inside a reasoning block followed by nothing or by garbage, after the prompt's
  format echoed (an empty box, tag or blank before the working), before the format's blank left
  empty;
- `form`: how the number is written -- plain, thousands and decimal marks of the marker's language
  and of English, percent, currency, units, fractions, mixed numbers, LaTeX groupings, scientific
  notation, another script's digits, words;
- `distractors`: other numbers in the reasoning -- none, intermediate values (the gold's value among
  them, half the time), the question's own numbers.

`bracketed_yes_no` builds a yes/no answer in the square brackets a prompt asked for ("[Yes]", seven
languages), on the last line, first with an explanation after it, or inside the last sentence.

Every axis is crossed with a right value (the gold's) and a wrong one (another number, shown in the
same form). The truth is the committed value's: a verdict may be unknown, never the opposite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from hypothesis import assume
from hypothesis import strategies as st


@dataclass(frozen=True)
class Language:
    code: str
    words: tuple[str, ...]  # answer markers read before punctuation, the first the usual one
    copula: str | None  # a sentence stating the answer: "{x}" stands for it
    group: str  # the thousands mark
    decimal: str  # the decimal mark
    reasoning: tuple[str, str]  # two sentences of working: {a}, {b} and {c} stand for numbers
    explanation: str  # the word that opens an explanation after an answer stated first
    currency: tuple[str, str] = ("$", "")  # (before the number, after it)


LANGUAGES: tuple[Language, ...] = (
    Language(
        "en",
        ("Answer", "Final answer", "Final Answer"),
        "The answer is {x}.",
        ",",
        ".",
        ("We start from {a} and {b}.", "Together that makes {c}."),
        "Explanation",
    ),
    Language(
        "zh",
        ("答案", "最终答案"),
        "所以答案是{x}。",
        ",",
        ".",
        ("我们先看{a}和{b}。", "中间结果是{c}。"),
        "解析",
        ("¥", ""),
    ),
    Language(
        "ja",
        ("答え", "最終的な答え"),
        "答えは{x}です。",
        ",",
        ".",
        ("まず{a}と{b}を考えます。", "途中の値は{c}です。"),
        "説明",
        ("¥", ""),
    ),
    Language(
        "ko",
        ("정답", "최종 답"),
        "정답은 {x}입니다.",
        ",",
        ".",
        ("먼저 {a}와 {b}를 봅니다.", "중간 값은 {c}입니다."),
        "설명",
        ("₩", ""),
    ),
    Language(
        "ru",
        ("Ответ", "Окончательный ответ"),
        "Ответ равен {x}.",
        "\u00a0",
        ",",
        ("Сначала берём {a} и {b}.", "Промежуточный итог равен {c}."),
        "Объяснение",
        ("", " руб."),
    ),
    Language(
        "uk",
        ("Відповідь",),
        "Відповідь дорівнює {x}.",
        " ",
        ",",
        ("Спочатку беремо {a} і {b}.", "Проміжний підсумок становить {c}."),
        "Пояснення",
        ("", " грн"),
    ),
    Language(
        "de",
        ("Antwort", "Endgültige Antwort"),
        "Die Antwort ist {x}.",
        ".",
        ",",
        ("Wir beginnen mit {a} und {b}.", "Das Zwischenergebnis beträgt {c}."),
        "Erklärung",
        ("", " €"),
    ),
    Language(
        "fr",
        ("Réponse", "Réponse finale"),
        "La réponse est {x}.",
        "\u202f",
        ",",
        ("On part de {a} et de {b}.", "Le résultat intermédiaire vaut {c}."),
        "Explication",
        ("", " €"),
    ),
    Language(
        "es",
        ("Respuesta", "Respuesta final"),
        "La respuesta es {x}.",
        ".",
        ",",
        ("Partimos de {a} y {b}.", "El resultado intermedio vale {c}."),
        "Explicación",
        ("", " €"),
    ),
    Language(
        "pt",
        ("Resposta", "Resposta final"),
        "A resposta é {x}.",
        ".",
        ",",
        ("Começamos com {a} e {b}.", "O resultado intermediário vale {c}."),
        "Explicação",
        ("R$ ", ""),
    ),
    Language(
        "it",
        ("Risposta",),
        "La risposta è {x}.",
        ".",
        ",",
        ("Partiamo da {a} e {b}.", "Il risultato intermedio vale {c}."),
        "Spiegazione",
        ("", " €"),
    ),
    Language(
        "nl",
        ("Antwoord",),
        "Het antwoord is {x}.",
        ".",
        ",",
        ("We beginnen met {a} en {b}.", "Het tussenresultaat bedraagt {c}."),
        "Uitleg",
        ("€ ", ""),
    ),
    Language(
        "pl",
        ("Odpowiedź",),
        "Odpowiedź to {x}.",
        " ",
        ",",
        ("Zaczynamy od {a} i {b}.", "Wynik pośredni wynosi {c}."),
        "Wyjaśnienie",
        ("", " zł"),
    ),
    Language(
        "tr",
        ("Cevap",),
        None,
        ".",
        ",",
        ("{a} ve {b} ile başlıyoruz.", "Ara sonuç {c} olur."),
        "Açıklama",
        ("", " TL"),
    ),
    Language(
        "id",
        ("Jawaban",),
        "Jawaban adalah {x}.",
        ".",
        ",",
        ("Kita mulai dari {a} dan {b}.", "Hasil antaranya {c}."),
        "Penjelasan",
        ("Rp ", ""),
    ),
    Language(
        "vi",
        ("Đáp án",),
        "Đáp án là {x}.",
        ".",
        ",",
        ("Ta bắt đầu từ {a} và {b}.", "Kết quả trung gian là {c}."),
        "Giải thích",
        ("", " đồng"),
    ),
    Language(
        "ar",
        ("الإجابة",),
        "الإجابة هي {x}.",
        "٬",
        "٫",
        ("نبدأ من {a} و {b}.", "النتيجة الوسيطة {c}."),
        "الشرح",
    ),
    Language(
        "hi",
        ("उत्तर",),
        None,
        ",",
        ".",
        ("हम {a} और {b} से शुरू करते हैं।", "बीच का परिणाम {c} है।"),
        "व्याख्या",
        ("₹", ""),
    ),
    Language(
        "th",
        ("คำตอบ",),
        "คำตอบคือ {x}",
        ",",
        ".",
        ("เริ่มจาก {a} และ {b}", "ผลลัพธ์ระหว่างทางคือ {c}"),
        "คำอธิบาย",
    ),
    Language(
        "el",
        ("Απάντηση",),
        "Η απάντηση είναι {x}.",
        ".",
        ",",
        ("Ξεκινάμε από {a} και {b}.", "Το ενδιάμεσο αποτέλεσμα είναι {c}."),
        "Εξήγηση",
    ),
    Language(
        "sv",
        ("Svar",),
        "Svaret är {x}.",
        " ",
        ",",
        ("Vi börjar med {a} och {b}.", "Delresultatet blir {c}."),
        "Förklaring",
        ("", " kr"),
    ),
)
BY_CODE = {lang.code: lang for lang in LANGUAGES}
# two to twelve in words, per language (a model may write a small answer so, with no digit)
NUMBER_WORDS: dict[str, tuple[str, ...]] = {
    code: tuple(words.split("|"))
    for code, words in (
        ("en", "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"),
        ("zh", "二|三|四|五|六|七|八|九|十|十一|十二"),
        ("ja", "二|三|四|五|六|七|八|九|十|十一|十二"),
        ("ko", "둘|셋|넷|다섯|여섯|일곱|여덟|아홉|열|열하나|열둘"),
        ("ru", "два|три|четыре|пять|шесть|семь|восемь|девять|десять|одиннадцать|двенадцать"),
        ("uk", "два|три|чотири|п'ять|шість|сім|вісім|дев'ять|десять|одинадцять|дванадцять"),
        ("de", "zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf"),
        ("fr", "deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze"),
        ("es", "dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|once|doce"),
        ("pt", "dois|três|quatro|cinco|seis|sete|oito|nove|dez|onze|doze"),
        ("it", "due|tre|quattro|cinque|sei|sette|otto|nove|dieci|undici|dodici"),
        ("nl", "twee|drie|vier|vijf|zes|zeven|acht|negen|tien|elf|twaalf"),
        ("pl", "dwa|trzy|cztery|pięć|sześć|siedem|osiem|dziewięć|dziesięć|jedenaście|dwanaście"),
        ("tr", "iki|üç|dört|beş|altı|yedi|sekiz|dokuz|on|on bir|on iki"),
        ("id", "dua|tiga|empat|lima|enam|tujuh|delapan|sembilan|sepuluh|sebelas|dua belas"),
        ("vi", "hai|ba|bốn|năm|sáu|bảy|tám|chín|mười|mười một|mười hai"),
        ("ar", "اثنان|ثلاثة|أربعة|خمسة|ستة|سبعة|ثمانية|تسعة|عشرة|أحد عشر|اثنا عشر"),
        ("hi", "दो|तीन|चार|पाँच|छह|सात|आठ|नौ|दस|ग्यारह|बारह"),
        ("th", "สอง|สาม|สี่|ห้า|หก|เจ็ด|แปด|เก้า|สิบ|สิบเอ็ด|สิบสอง"),
        ("el", "δύο|τρία|τέσσερα|πέντε|έξι|επτά|οκτώ|εννέα|δέκα|έντεκα|δώδεκα"),
        ("sv", "två|tre|fyra|fem|sex|sju|åtta|nio|tio|elva|tolv"),
    )
}
PUNCTUATION = (": ", ":", "：", " : ", "： ")
# a last sentence that concludes with no answer marker, opened by a concluding word of its language
# ({x} stands for the value); Thai is left out (no concluding word of it is read)
CONCLUDING: dict[str, str] = {
    "en": "Therefore, we get {x} in all.",
    "zh": "因此，一共是{x}。",
    "ja": "したがって、合計は{x}です。",
    "ko": "따라서 모두 {x}입니다.",
    "ru": "Таким образом, всего получается {x}.",
    "uk": "Отже, всього виходить {x}.",
    "de": "Daher ergibt sich {x}.",
    "fr": "Par conséquent, il en reste {x}.",
    "es": "Por lo tanto, en total son {x}.",
    "pt": "Portanto, no total são {x}.",
    "it": "Quindi, in totale sono {x}.",
    "nl": "Dus in totaal zijn het er {x}.",
    "pl": "Zatem łącznie jest ich {x}.",
    "tr": "Bu nedenle toplam {x} olur.",
    "id": "Jadi, totalnya adalah {x}.",
    "vi": "Do đó, tổng cộng là {x}.",
    "ar": "لذلك، المجموع هو {x}.",
    "hi": "इसलिए, कुल {x} हैं।",
    "el": "Επομένως, συνολικά είναι {x}.",
    "sv": "Alltså blir det totalt {x}.",
}

# ------------------------------------------------------------------------------------ values


def _digits(value: Fraction, places: int) -> tuple[str, str]:
    """(the whole part's digits, the decimal digits) of a value with `places` decimals."""
    scaled = round(value * 10**places)
    whole, frac = divmod(abs(scaled), 10**places)
    return str(whole), (str(frac).rjust(places, "0") if places else "")


def _places(value: Fraction) -> int:
    for places in range(0, 4):
        if value * 10**places == int(value * 10**places):
            return places
    raise ValueError("not a short decimal")


def plain(value: Fraction) -> str:
    whole, frac = _digits(value, _places(value))
    return whole + ("." + frac if frac else "")


def grouped(value: Fraction, group: str, decimal: str) -> str:
    whole, frac = _digits(value, _places(value))
    parts: list[str] = []
    while len(whole) > 3:
        parts.insert(0, whole[-3:])
        whole = whole[:-3]
    return group.join([whole, *parts]) + (decimal + frac if frac else "")


def _is_short_decimal(value: Fraction) -> bool:
    return (value * 1000).denominator == 1


@dataclass(frozen=True)
class Shown:
    """A value as written: in text, and inside math (LaTeX: "\\$", "\\%", \\frac)."""

    text: str
    latex: str


def forms(value: Fraction, lang: Language) -> dict[str, Shown]:
    """Every number form that writes `value` (module doc), by class."""
    out: dict[str, Shown] = {}
    if _is_short_decimal(value):
        p = plain(value)
        out["plain"] = Shown(p, p)
        if value >= 1000 or value != int(value):
            en = grouped(value, ",", ".")
            out["grouped en"] = Shown(en, en.replace(",", "{,}"))
            local = grouped(value, lang.group, lang.decimal)
            if local != en:
                out["grouped locale"] = Shown(local, local.replace(",", "{,}").replace("\u00a0", "\\,"))
        if value >= 1000:
            out["latex thin space"] = Shown(grouped(value, "\u2009", "."), grouped(value, "\\,", "."))
            out["apostrophe groups"] = Shown(grouped(value, "'", "."), grouped(value, "'", "."))
        out["percent"] = Shown(p + "%", p + "\\%")
        before, after = lang.currency
        money = grouped(value, lang.group, lang.decimal) if lang.code != "en" else grouped(value, ",", ".")
        out["currency"] = Shown(before + money + after, (before.replace("$", "\\$") + money + after).strip())
        out["units"] = Shown(p + " cm", p + " \\text{ cm}")
        # a temperature: the degree sign and its scale are a unit like any other
        out["degrees"] = Shown(p + "°C", p + "^\\circ C")
        out["degrees, spaced"] = Shown(p + " °F", p + "\\,^{\\circ}\\mathrm{C}")
        out["degree sign alone"] = Shown(p + "°", p + "^{\\circ}")
        out["degree character"] = Shown(p + "℃", p + "\\,^\\circ\\text{F}")
        if value >= 10:
            mantissa = value / 10 ** (len(str(int(value))) - 1)
            exponent = len(str(int(value))) - 1
            if _is_short_decimal(mantissa):
                m = plain(mantissa)
                out["scientific"] = Shown(f"{m}e{exponent}", f"{m} \\times 10^{{{exponent}}}")
        if lang.code == "ar" or lang.code == "hi":
            digits = "٠١٢٣٤٥٦٧٨٩" if lang.code == "ar" else "०१२३४५६७८९"
            native = p.translate(str.maketrans("0123456789.", digits + lang.decimal))
            out["native digits"] = Shown(native, p)
        out["full-width digits"] = Shown(
            p.translate(str.maketrans("0123456789.", "０１２３４５６７８９．")), p
        )
    if value.denominator == 1 and 2 <= value <= 12:
        word = NUMBER_WORDS[lang.code][int(value) - 2]
        out["number words"] = Shown(word, f"\\text{{{word}}}")
    if value.denominator != 1 and value.denominator <= 12:
        n, d = value.numerator, value.denominator
        out["fraction"] = Shown(f"{n}/{d}", f"\\frac{{{n}}}{{{d}}}")
        if value > 1:
            whole, rest = divmod(n, d)
            out["mixed number"] = Shown(f"{whole} {rest}/{d}", f"{whole}\\frac{{{rest}}}{{{d}}}")
    return out


def gold_text(value: Fraction, kind: str, form: str) -> str:
    """The gold as a dataset writes it: GSM8K a plain number, MATH LaTeX (a fraction as \\frac)."""
    if form == "percent" and kind == "math":
        return plain(value) + "\\%"
    if _is_short_decimal(value) and (kind == "gsm8k" or value.denominator == 1):
        return plain(value)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


@st.composite
def values(draw: st.DrawFn) -> Fraction:
    """A gold value: an integer (up to twelve, small, or large enough for thousands marks), a short
    decimal, or a fraction."""
    how = draw(st.sampled_from(("tiny", "small", "large", "decimal", "fraction")))
    if how == "tiny":  # (written in words as well)
        return Fraction(draw(st.integers(2, 12)))
    if how == "small":
        return Fraction(draw(st.integers(2, 999)))
    if how == "large":
        return Fraction(draw(st.integers(1001, 9_999_999)))
    if how == "decimal":
        return Fraction(draw(st.integers(11, 999_999)), draw(st.sampled_from((10, 100, 4))))
    d = draw(st.integers(3, 12))
    n = draw(st.integers(1, 4 * d).filter(lambda k: k % d != 0))
    return Fraction(n, d)


def wrong_values(value: Fraction) -> st.SearchStrategy[Fraction]:
    """Another value of the same shape (it may be written in the same forms)."""
    candidates = [value + 1, value + 10, value * 10, value + Fraction(1, value.denominator), value * 2]
    if value > 2:
        candidates.append(value - 1)
    return st.sampled_from([c for c in candidates if c != value and c > 0])


# ---------------------------------------------------------------------------------- the output

WRAPPERS = (
    "plain",
    "bold value",
    "bold line",
    "bold marker",
    "heading",
    "quoted line",
    "quoted block",
    "fenced block",
    "fenced block with a language",
    "triple-quoted block",
    "boxed",
    "answer tag",
    "json field",
    "table row",
    "bullet under the marker",
    "numbered item under the marker",
    "rule between marker and value",
    "blank lines between marker and value",
)
# "concluding word": the last sentence opens with one (CONCLUDING); "closing line": the last paragraph
# is one short line stating the value with no marker and no concluding word (the working's own
# sentence, "Together that makes {x}.")
MARKERS = ("line", "copula", "none", "concluding word", "closing line")
SENTENCE_MARKERS = ("concluding word", "closing line")
POSITIONS = (
    "last",
    "first",
    "then a check",
    "then a rating",
    "inside reasoning",
    "inside reasoning, garbage",
    "after the prompt's format echoed",
    "then the format's empty blank",
    "then a check cut off",
)
# how a check after the answer breaks off mid-clause (the output's token limit): on a copula, a
# function word, an "=" or a comma, with no full stop
CUT_CLAUSES = (
    "so the calculation is",
    "which is the total of",
    "and so",
    "so the difference =",
    "which we add to the rest,",
)
DISTRACTORS = ("none", "intermediate values", "question's numbers")


def _block(wrapper: str, marker: str, lang: Language, word: str, punct: str, x: Shown) -> str | None:
    """The answer's statement: the value in its wrapper, introduced by the marker (None where the
    two do not go together)."""
    if marker == "concluding word":
        return CONCLUDING[lang.code].format(x=x.text) if lang.code in CONCLUDING else None
    if marker == "closing line":
        return lang.reasoning[1].format(c=x.text)
    lead = f"{word}{punct}" if marker == "line" else ""
    if marker == "copula":
        if lang.copula is None or wrapper not in ("plain", "bold value", "boxed"):
            return None
        value = {"plain": x.text, "bold value": f"**{x.text}**", "boxed": f"$\\boxed{{{x.latex}}}$"}[wrapper]
        return lang.copula.format(x=value)
    if marker == "none" and wrapper not in ("plain", "bold line", "boxed", "answer tag", "json field"):
        return None
    sep = "" if not lead or lead.endswith(" ") else " "
    if wrapper == "plain":
        return f"{lead}{sep}{x.text}" if lead else x.text
    if wrapper == "bold value":
        return f"{lead}{sep}**{x.text}**"
    if wrapper == "bold line":
        return f"**{lead}{sep}{x.text}**" if lead else f"**{x.text}**"
    if wrapper == "bold marker":
        return f"**{lead.rstrip()}** {x.text}"
    if wrapper == "heading":
        return f"## {word}\n\n{x.text}"
    if wrapper == "quoted line":
        return f"> {lead}{sep}{x.text}"
    if wrapper == "quoted block":
        return f"{lead.rstrip()}\n> {x.text}"
    if wrapper == "fenced block":
        return f"{lead.rstrip()}\n```\n{x.text}\n```"
    if wrapper == "fenced block with a language":
        return f"{lead.rstrip()}\n\n```text\n{x.text}\n```"
    if wrapper == "triple-quoted block":
        return f'{lead.rstrip()}\n"""\n{x.text}\n"""'
    if wrapper == "boxed":
        box = f"$\\boxed{{{x.latex}}}$"
        return f"{lead}{sep}{box}" if lead else f"$${box[1:-1]}$$"
    if wrapper == "answer tag":
        return f"<answer>{x.text}</answer>"
    if wrapper == "json field":
        return '{"reasoning": "see above", "answer": "' + x.latex.replace("\\", "\\\\") + '"}'
    if wrapper == "bullet under the marker":
        return f"{lead.rstrip()}\n- {x.text}"
    if wrapper == "numbered item under the marker":
        return f"{lead.rstrip()}\n1. {x.text}"
    if wrapper == "rule between marker and value":
        return f"{lead.rstrip()}\n\n---\n\n{x.text}"
    if wrapper == "blank lines between marker and value":
        return f"{lead.rstrip()}\n\n\n\n{x.text}"
    if wrapper == "table row":
        return f"| | |\n| --- | --- |\n| {word} | {x.text} |"
    raise ValueError(wrapper)


@dataclass(frozen=True)
class Case:
    output: str
    gold: str
    kind: str
    right: bool  # the committed value is the gold's
    classes: dict[str, str] = field(default_factory=dict)  # axis -> class

    def describe(self) -> str:
        return f"{self.classes} gold={self.gold!r} right={self.right}\n{self.output}"


# the instruction a prompt gave, repeated by the model before it works: an empty box, an answer tag
# or a marker holding no value, before the answer itself
ECHOES = (
    "I will put the final answer within \\boxed{}.",
    "The final answer will be inside <answer></answer>.",
    "Format: Answer: ___",
    # a chat prompt echoed whole: its format's placeholder, then the problem it goes on with
    "Output the final answer on a line starting with:\n#### <number>\n\nProblem:\nHow many are there?",
)
# the blank of a prompt's format, written empty after the answer
BLANKS = ("Final answer: ___", "\\boxed{}", "<answer></answer>", "Answer: [Answer]")
GARBAGE = (
    " ;;;; ,,,, !!!! ))))",
    "<|reserved_special_token_7|><|reserved_special_token_7|>",
    "\n\nthe the the the the",
)


@st.composite
def presentations(draw: st.DrawFn) -> Case:
    """One output, its gold and its truth (module doc)."""
    lang = draw(st.sampled_from(LANGUAGES))
    value = draw(values())
    # a GSM8K gold is a number a decimal writes; a fraction's is MATH's
    kind = draw(st.sampled_from(("gsm8k", "math"))) if _is_short_decimal(value) else "math"
    right = draw(st.booleans())
    shown_value = value if right else draw(wrong_values(value))
    gold_forms, shown_forms = forms(value, lang), forms(shown_value, lang)
    both = sorted(set(gold_forms) & set(shown_forms))
    assume(both)  # (a value and another that share no written form: another draw)
    form = draw(st.sampled_from(both))
    x = shown_forms[form]
    marker = draw(st.sampled_from(MARKERS))
    # (a sentence read for its value holds it as written: no wrapper)
    wrapper = "plain" if marker in SENTENCE_MARKERS else draw(st.sampled_from(WRAPPERS))
    word = draw(st.sampled_from(lang.words))
    punct = draw(st.sampled_from(PUNCTUATION))
    block = _block(wrapper, marker, lang, word, punct, x)
    if block is None:  # the two do not go together: the plain statement instead
        wrapper = "plain"
        block = _block(wrapper, "line", lang, word, punct, x)
        marker = "line"
    assert block is not None
    distractors = draw(st.sampled_from(DISTRACTORS))
    a, b = draw(st.integers(2, 99)), draw(st.integers(2, 99))
    gold_value = plain(value) if _is_short_decimal(value) else f"{value.numerator}/{value.denominator}"
    c = gold_value if distractors == "intermediate values" and draw(st.booleans()) else str(a * b)
    if form in ("grouped locale", "currency") and lang.decimal != "." and c != gold_value:
        # an output in that language writes its other numbers with the same marks ("12,5")
        c = grouped(Fraction(a * b * 10 + 5, 10), lang.group, lang.decimal)
    working = [s.format(a=a, b=b, c=c) for s in lang.reasoning]
    if distractors == "question's numbers":
        working.insert(0, f"Given: {a} and {b}, and {draw(st.integers(100, 999))} in total.")
    elif distractors == "none":
        working = [s.format(a="the first part", b="the second", c="the total") for s in lang.reasoning]
    reasoning = " ".join(working)
    position = draw(st.sampled_from(POSITIONS))
    if (marker == "none" and position == "first" and wrapper != "plain") or (
        marker in SENTENCE_MARKERS and position == "first"
    ):
        # (a concluding sentence first, an explanation after it, is no conclusion)
        position = "last"
    if position == "last":
        output = f"{reasoning}\n\n{block}"
    elif position == "first":
        output = f"{block}\n\n{lang.explanation}: {reasoning}"
    elif position == "then a check":
        output = f"{reasoning}\n\n{block}\n\nCheck: {x.text} fits both conditions. ✓"
    elif position == "then a rating":
        output = f"{reasoning}\n\n{block}\n\nConfidence: {draw(st.sampled_from(('90%', '100%', 'high')))}"
    elif position == "after the prompt's format echoed":
        echo = draw(st.sampled_from(ECHOES))
        output = f"{echo}\n\n{reasoning}\n\n{block}"
    elif position == "then a check cut off":
        # the check writes other values, the last of them on the line before the cut: none of them
        # is the answer ("$22,800 is 30% of $76,000, so the calculation is")
        d = draw(st.integers(100, 999).filter(lambda k: Fraction(k) not in (value, shown_value)))
        cut = draw(st.sampled_from(CUT_CLAUSES))
        output = f"{reasoning}\n\n{block}\n\nCheck:\nDifference = {d}\n{d} is part of it, {cut}"
    elif position == "then the format's empty blank":
        output = f"{reasoning}\n\n{block}\n\n{draw(st.sampled_from(BLANKS))}"
    else:
        tail = draw(st.sampled_from(GARBAGE)) if position.endswith("garbage") else ""
        output = f"<think>\n{reasoning}\n{block}\n</think>{tail}"
    classes = {
        "language": lang.code,
        "marker": marker,
        "punctuation": repr(punct) if marker == "line" else "(none)",
        "wrapper": wrapper,
        "position": position,
        "form": form,
        "distractors": distractors,
    }
    return Case(output, gold_text(value, kind, form), kind, right, classes)


# ------------------------------------------------------------------- a yes/no answer in brackets

# the words that say yes and no, per language, as a model writes them in the prompt's "[Yes]" format
YES_NO: tuple[tuple[str, str, str], ...] = (
    ("en", "Yes", "No"),
    ("de", "Ja", "Nein"),
    ("fr", "Oui", "Non"),
    ("es", "Sí", "No"),
    ("pt", "Sim", "Não"),
    ("ru", "Да", "Нет"),
    ("zh", "是", "否"),
)
BRACKET_PLACES = ("last line", "first line, explanation after", "inside the last sentence")


@st.composite
def bracketed_yes_no(draw: st.DrawFn) -> Case:
    """A yes/no answer in square brackets ("[Yes]", the format a prompt asked for) at one of
    BRACKET_PLACES, after or before working that states numbers; the gold "yes"/"no" in English."""
    code, yes, no = draw(st.sampled_from(YES_NO))
    says_yes, gold_yes = draw(st.booleans()), draw(st.booleans())
    word = yes if says_yes else no
    n = draw(st.integers(1001, 99999))
    working = (
        f"We check whether {n} is prime. Its square root is about {int(n**0.5)}; we try every prime up to it."
    )
    place = draw(st.sampled_from(BRACKET_PLACES))
    if place == "last line":
        output = f"{working}\n\n[{word}]"
    elif place == "first line, explanation after":
        output = f"[{word}]\n\nExplanation: {working}"
    else:
        output = f"{working}\n\nTherefore, [{word}], {n} is the number we asked about."
    gold = draw(st.sampled_from(("yes", "Yes", "YES"))) if gold_yes else draw(st.sampled_from(("no", "No")))
    classes = {"language": code, "place": place}
    return Case(output, gold, "math", says_yes == gold_yes, classes)


# ------------------------------------------------------------ a word on an explicit answer line

# a word answer and its opposite, as a MATH problem asks for one ("even, odd, or neither?")
ANSWER_WORDS = (("even", "odd"), ("yes", "no"), ("increasing", "decreasing"), ("convergent", "divergent"))
ANSWER_LINES = ("ANSWER: {w}", "Answer: {w}", "Final answer: {w}", "**Answer:** {w}")
RATING_LINES = ("", "\nCONFIDENCE: 100", "\nConfidence: 90%", "\n\nConfidence level: high")


@st.composite
def answer_word_line(draw: st.DrawFn) -> Case:
    """A word answer on the explicit answer line a prompt asked for ("ANSWER: even"), a rating of it
    on the next line or none, after working whose last sentence names an expression and the word
    ("So \\( h(x) \\) is even."); the gold the word, bare or in \\text{}. The marker's line is the
    committed answer, not the expression in the prose."""
    yes, no = draw(st.sampled_from(ANSWER_WORDS))
    says, gold_says = draw(st.booleans()), draw(st.booleans())
    word = yes if says else no
    prose_word = draw(st.sampled_from((word, yes if not says else no)))
    name = draw(st.sampled_from(("h(x)", "f(g(x^3))", "the series", "n")))
    working = (
        f"We compute \\( h(-x) = f(g(-x^3)) \\) and compare it with \\( {name} \\).\n\n"
        f"So \\( {name} \\) is {prose_word}."
    )
    line = draw(st.sampled_from(ANSWER_LINES)).format(w=word)
    rating = draw(st.sampled_from(RATING_LINES))
    output = f"{working}\n\n{line}{rating}"
    gold_word = yes if gold_says else no
    gold = draw(st.sampled_from((f"\\text{{{gold_word}}}", gold_word, gold_word.capitalize())))
    classes = {"answer line": line.replace(word, "{w}"), "rating": rating.strip() or "(none)"}
    return Case(output, gold, "math", says == gold_says, classes)


def right_or_other(draw: st.DrawFn, value: int, others: st.SearchStrategy[int]) -> tuple[bool, int]:
    """(whether the shown value is the gold's, the value shown): the gold's, or one of `others` that
    is not it."""
    says = draw(st.booleans())
    return says, value if says else draw(others.filter(lambda v: v != value))


@st.composite
def percent_answer_line(draw: st.DrawFn) -> Case:
    """A percentage on the explicit answer line ("ANSWER: 44%"), a rating on the next line or none,
    after working that names other percentages; the gold a percentage (`44\\%`) or bare. The rating's
    word stands on its own line: it rates nothing on the answer's line ("44%" is no "44% confident")."""
    value = draw(st.integers(1, 400))
    says, shown = right_or_other(draw, value, st.integers(1, 400))
    step = draw(st.integers(5, 50))
    working = f"Each side grows by {step}%, so the area is multiplied by {(100 + step) / 100:g} twice."
    sign = draw(st.sampled_from(("%", " %", "\\%")))
    line = draw(st.sampled_from(ANSWER_LINES)).format(w=f"{shown}{sign}")
    rating = draw(st.sampled_from(RATING_LINES))
    gold = draw(st.sampled_from((f"{value}\\%", f"{value}")))
    classes = {"answer line": line, "rating": rating.strip() or "(none)"}
    return Case(f"{working}\n\n{line}{rating}", gold, "math", says, classes)


# feedback a model invents after its answer, as if the user had replied
FEEDBACK = (
    "That answer is incorrect. Please reconsider carefully and try again.",
    "The answer is correct. Well done!",
    "This answer is wrong, please try again.",
)


@st.composite
def feedback_turns_cut(draw: st.DrawFn) -> Case:
    """`#### N` answers, each followed by feedback the model invented ("That answer is incorrect.
    Please reconsider ..."), repeated, the reply cut inside the last feedback line's words: the cut
    word begins talk about the answer, not a value; the committed value is the hashes' one."""
    value = draw(st.integers(2, 99_999))
    says, shown = right_or_other(draw, value, st.integers(2, 99_999))
    feedback = draw(st.sampled_from(FEEDBACK))
    turns = draw(st.integers(1, 4))
    lead = draw(st.sampled_from(("Answer: ", "")))
    body = "".join(f"{lead}#### {shown}\n{feedback}\n" for _ in range(turns))
    talk = feedback.index(" is ") + len(" is ")
    cut = talk + draw(st.integers(2, len(feedback[talk:].split()[0].rstrip(".,!"))))
    output = f"{body}{lead}#### {shown}\n{feedback[:cut]}"
    classes = {"feedback": feedback, "turns": str(turns), "cut word": feedback[talk:cut]}
    return Case(output, str(value), "gsm8k", says, classes)


# a role line that opens a conversation the model made up after its answer, the assistant's own role
# word before the user's or not
INVENTED_ROLE_LINES = ("User: ", "Human: ", "Assistant: User: ", "AI: User: ", "**Assistant:** **User:** ")


@st.composite
def invented_conversation(draw: st.DrawFn) -> Case:
    """An answer, then a conversation the model invents ("Assistant: User: How much did it cost?" and
    an "Answer:" of its own): nothing after the role line counts (convention 4); the committed value
    is the one before it."""
    value = draw(st.integers(2, 99_999))
    says, shown = right_or_other(draw, value, st.integers(2, 99_999))
    other = draw(st.integers(2, 99_999).filter(lambda n: n not in (value, shown)))
    conclusion = draw(st.sampled_from(("So the answer is {x}.", "Final answer: {x}", "The answer is ${x}$.")))
    role = draw(st.sampled_from(INVENTED_ROLE_LINES))
    output = (
        f"We add the parts: 12 + 30 = 42.\n{conclusion.format(x=shown)}\n\n"
        f"{role}How much did the second one cost?\nAssistant: It cost 7 more.\n\nAnswer: {other}"
    )
    return Case(output, str(value), "gsm8k", says, {"conclusion": conclusion, "role line": role})


@st.composite
def thousands_equation_line(draw: st.DrawFn) -> Case:
    """Column arithmetic, then a closing equation whose numbers carry thousands commas ("So,
    \\(5,000 - 1,456 = 3,544\\).") against a MATH gold written with or without them: as a list the
    commas split it, with thousands marks it states the gold; never the opposite verdict."""
    a = draw(st.integers(1_000, 999_999))
    b = draw(st.integers(1_000, a))
    says, shown = right_or_other(draw, a - b, st.integers(1_000, 999_999))
    working = f"Subtract column by column:\n\n```\n   {a}\n-  {b}\n______\n   {shown}\n```"
    line = draw(st.sampled_from(("So, \\({x}\\).", "Therefore {x}.", "So, ${x}$.")))
    equation = f"{a:,} - {b:,} = {shown:,}"
    gold = draw(st.sampled_from((f"{a - b:,}", str(a - b))))
    return Case(f"{working}\n\n{line.format(x=equation)}", gold, "math", says, {"line": line})


# what a tutoring reply says to the reader after its answer
TO_THE_READER = (
    "Do you have any questions about this process?",
    "Does this make sense? Do you have any questions about the steps?",
    "I hope this helps! Let me know if anything is unclear.",
)


@st.composite
def bold_conclusion_to_the_reader(draw: st.DrawFn) -> Case:
    """A tutoring reply: steps, a concluding clause in bold whole ("**Therefore, Sam has $2 left.**")
    or with its value in bold ("So, there are **5** birds left!"), then a question or an offer to
    the reader or none. The clause's value is the answer; what is said to the reader commits to
    nothing."""
    total, spent = draw(st.integers(3, 500)), draw(st.integers(1, 200))
    assume(spent < total)
    value = total - spent
    says, shown = right_or_other(draw, value, st.integers(0, 600).filter(lambda v: v not in (total, spent)))
    working = f"**Step 1: Subtract**\n\n- ${total} - ${spent} = ${shown}"
    clause = draw(
        st.sampled_from(
            (
                "**Therefore, Sam has ${x} left after buying the toy.**",
                "**So, the answer is {x}.**",
                "So, there are **{x}** birds left on the tree!",
                "**Therefore, {x} is what he has left**.",
            )
        )
    )
    closing = draw(st.sampled_from(("", *TO_THE_READER)))
    output = f"{working}\n\n{clause.format(x=shown)}" + (f"\n\n{closing}" if closing else "")
    gold = draw(st.sampled_from((str(value), f"${value}")))
    return Case(output, gold, "gsm8k", says, {"clause": clause, "closing": closing or "(none)"})


@st.composite
def hash_answer_line(draw: st.DrawFn) -> Case:
    """The "# <answer>" line a prompt asked for, last, after working with markdown headings ("# Step
    2: ..."); the line breaks kept or flattened to two spaces, as one source stores replies. The value
    is plain, with a unit, in `\\( x = v \\)` or in `\\text{v}`."""
    value = draw(st.integers(0, 5_000))
    says, shown = right_or_other(draw, value, st.integers(0, 5_000))
    form = draw(st.sampled_from(("{v}", "{v} yards", "\\( x = {v} \\)", "\\text{{{v}}}", "\\( {v} \\)")))
    step = draw(st.integers(1, 9))
    lines = [f"# Step {step}: set up", f"We combine the parts: {step} + {shown} - {step} = {shown}.", ""]
    lines.append(f"# {form.format(v=shown)}")
    joiner = draw(st.sampled_from(("\n", "  ")))
    return Case(joiner.join(lines), str(value), "gsm8k", says, {"form": form, "breaks": repr(joiner)})


@st.composite
def shown_sum(draw: st.DrawFn) -> tuple[int, int, bool, int]:
    """(a, b, whether the value shown is their sum, the value shown): the working of the presentations
    below adds two numbers, and shows the sum or another value."""
    a, b = draw(st.integers(10, 900)), draw(st.integers(10, 900))
    says, shown = right_or_other(draw, a + b, st.integers(10, 2_000))
    return a, b, says, shown


# markdown headings of level four over a reply's steps: "####" and a title, not GSM8K's "#### <answer>"
H4_HEADINGS = (
    "#### Step {n}: {title}",
    "#### Step {n}",
    "#### {n}. {title}",
    "#### {n}) {title}",
    "#### Part {n}",
    "#### {title}:",
    "#### Step {n} of {m}",
    "#### {title} for group {n}",
)
H4_TITLES = ("Count the apples", "Thousands place", "Result", "Combine the groups")
# how the reply states its answer under its last heading
H4_ENDINGS = ("So she has {x} apples in all.", "The answer is {x}.", "**Answer:** {x}", "#### {x}")


@st.composite
def markdown_h4_steps(draw: st.DrawFn) -> Case:
    """Working under markdown headings of level four ("#### Step 2: Result", "#### 2. Final count",
    "#### Thousands place:"), whose step numbers are not the answer, then the answer stated under the
    last one: in a concluding sentence, after a marker, or on GSM8K's own "#### <answer>" line last.
    A heading is a title, no answer: never the opposite verdict; "#### <answer>" last is decided."""
    a, b, says, shown = draw(shown_sum())
    value = a + b
    heading = draw(st.sampled_from(H4_HEADINGS))
    ending = draw(st.sampled_from(H4_ENDINGS))
    steps = draw(st.integers(2, 3))
    numbers = [n for n in range(1, steps + 1)]
    assume(value not in numbers and shown not in numbers)
    sections = []
    for n in numbers:
        title = draw(st.sampled_from(H4_TITLES))
        sections.append(heading.format(n=n, m=steps, title=title))
        sections.append(f"We have {a} and {b} here." if n < steps else f"{a} + {b} = {shown}")
    output = "\n".join(sections) + "\n\n" + ending.format(x=shown)
    return Case(output, str(value), "gsm8k", says, {"heading": heading, "ending": ending})


# lines that number or title parts of a reply, each with a number that is not the answer: options
# compared ("A: ...", "B: ..."), and an answer heading whose next line is a section's title
OPTION_LISTS = ("A: {o} apples is too few.\nB: {p} apples is too many.", "A: {o}\nB: {p}\nC: {q}")
ANSWER_OVER_SECTIONS = (
    "## Answer\n\n### Step {n}",
    "## Final Answer\n\n### {n}. Count",
    "**Answer**\n### Part {n}",
)
PART_ENDINGS = ("So she has {x} apples.", "The answer is {x}.", "Therefore, there are {x} apples in all.")


@st.composite
def numbered_parts(draw: st.DrawFn) -> Case:
    """Options compared on "A:" / "B:" lines, or an answer heading ("## Answer") whose next line is a
    section's title ("### Step 1"), each holding a number that is not the answer, then the answer
    stated last. An option or a section title is no answer: never the opposite verdict."""
    a, b, says, shown = draw(shown_sum())
    value = a + b
    others = [draw(st.integers(2, 2_000)) for _ in range(3)]
    n = draw(st.integers(1, 9))
    assume(value not in (n, *others) and shown not in (n, *others))
    layout = draw(st.sampled_from((*OPTION_LISTS, *ANSWER_OVER_SECTIONS)))
    head = layout.format(o=others[0], p=others[1], q=others[2], n=n)
    ending = draw(st.sampled_from(PART_ENDINGS))
    output = f"{head}\nWe add {a} and {b}: {a} + {b} = {shown}.\n\n{ending.format(x=shown)}"
    return Case(output, str(value), "gsm8k", says, {"layout": layout, "ending": ending})


# an answer marker numbered like its question ("Question 3: ..." then "Answer 3: 42")
NUMBERED_MARKERS = (
    "Answer {k}: {x}",
    "**Answer {k}:** {x}",
    "Answer ({k}): {x}",
    "Answer #{k}: {x}",
    "Ответ {k}: {x}",
)


@st.composite
def numbered_answer_line(draw: st.DrawFn) -> Case:
    """A question and its answer numbered alike ("Question 3: ...", "Answer 3: 42"), the number not
    the answer: the marker's value is the answer, read and decided, never the opposite."""
    a, b, says, shown = draw(shown_sum())
    value = a + b
    k = draw(st.integers(1, 99))
    assume(k not in (value, shown))
    marker = draw(st.sampled_from(NUMBERED_MARKERS))
    output = f"Question {k}: How many apples are there?\nWe add {a} and {b}.\n{marker.format(k=k, x=shown)}"
    return Case(output, str(value), "gsm8k", says, {"marker": marker})


UNITS = ("cups", "apples", "pounds of flour", "crates", "birds")


@st.composite
def unit_gold(draw: st.DrawFn) -> Case:
    """A gold that is a value and its unit ("3 3/4 cups", "12 apples", "$45 dollars"), against a boxed
    or marked answer of the same or another value: the unit is ignored (convention 3), so the
    verdict is decided, never the opposite."""
    whole, num = draw(st.integers(0, 40)), draw(st.integers(0, 3))
    value = Fraction(whole) + Fraction(num, 4)
    says = draw(st.booleans())
    shown = value if says else value + draw(st.sampled_from((Fraction(1, 4), Fraction(1), Fraction(-1, 2))))
    assume(shown > 0 and value > 0)
    unit = draw(st.sampled_from(UNITS))
    gold_number = str(whole) if num == 0 else (f"{whole} {num}/4" if whole else f"{num}/4")
    gold = f"{gold_number} {unit}"
    answer = f"\\frac{{{shown.numerator}}}{{{shown.denominator}}}" if shown.denominator > 1 else str(shown)
    line = draw(st.sampled_from(("So you need $\\boxed{{{x}}}$ {u}.", "Final answer: ${x}$ {u}")))
    output = f"We multiply the amount per batch by the batches.\n\n{line.format(x=answer, u=unit)}"
    return Case(output, gold, draw(st.sampled_from(("gsm8k", "math"))), says, {"line": line, "unit": unit})


REFUSAL_LINES = (
    "Answer: $[ACD]$ cannot be determined from the given information.",
    "Final answer: I don't know",
    "Therefore, the answer is undefined.",
    "**Answer:** Not enough information to determine it.",
    "Ответ: невозможно определить.",
    "答案：无法确定",
)


@st.composite
def refusal_answer(draw: st.DrawFn) -> Case:
    """An answer that declines to give a value ("cannot be determined", "I don't know") after working
    that writes the gold's value or not: it commits to no value, so never `correct`; where the
    gold's value is written nowhere it is `wrong` (rule (b)), else undecided."""
    gold = draw(st.integers(-50, 10_000))
    other = draw(st.integers(2, 9))
    assume(abs(gold) != other)  # (the stated gold is read by magnitude)
    writes_gold = draw(st.booleans())
    working = f"We know {other} of the parts. " + (
        f"One guess is {gold}, but it is not justified." if writes_gold else "The rest is not given."
    )
    line = draw(st.sampled_from(REFUSAL_LINES))
    classes = {"line": line, "gold written": str(writes_gold)}
    return Case(f"{working}\n\n{line}", str(gold), "gsm8k", not writes_gold, classes)


# an output cut off in its working, after a sentence a concluding-sentence reader takes a letter from
CUT_AFTER_A_LETTER = (
    "Thus the side is \\( s \\), where \\( s^2 = {p} s + {q} \\).\n\nNow for the other case (",
    "Since we squared both sides, we must check that for each root \\( z \\), \\( {q} + {p}z \\geq 0 \\)"
    " (so the square root is defined), and that the sign matches.\n\nBut for the general solution (",
)


@st.composite
def cut_after_a_weak_reading(draw: st.DrawFn) -> Case:
    """An output cut off ("... for the general solution (") whose only reading, a variable out of
    its last sentence, nothing confirms, against a gold that is an expression ("3\\sqrt{5}") or a
    number: as for a cut-off output with no answer, `wrong` where the gold's value is stated nowhere
    (rule (b)), else undecided. `right` here: the gold is stated nowhere."""
    a, b = draw(st.integers(2, 9)), draw(st.sampled_from((2, 3, 5, 6, 7)))
    # an expression, or a number no other number of the output can be
    gold = draw(st.sampled_from((f"{a}\\sqrt{{{b}}}", str(100 * a + b))))
    p, q = draw(st.integers(2, 9)), draw(st.integers(1, 9))
    writes_gold = draw(st.booleans())
    working = "The solutions are the roots of\n\\[\nz^2 - " + f"{p}z - {q} = 0\n\\]\n\n"
    if writes_gold:
        working += f"One candidate is \\( {gold} \\), not yet checked.\n\n"
    cut = draw(st.sampled_from(CUT_AFTER_A_LETTER)).format(p=p, q=q)
    classes = {"cut": cut[:30], "gold written": str(writes_gold)}
    return Case(working + cut, gold, "math", not writes_gold, classes)


# --------------------------------------------------------------------------------- the report

AXES = ("language", "marker", "punctuation", "wrapper", "position", "form", "distractors")


def coverage_table(judged: list[tuple[Case, str]]) -> str:
    """Per axis and class: cases, definite verdicts (and their share), and verdicts opposite to the
    truth, from (case, label) pairs; a markdown table."""
    lines = ["| axis | class | cases | definite | opposite |", "| --- | --- | --- | --- | --- |"]
    for axis in AXES:
        counts: dict[str, list[int]] = {}
        for case, label in judged:
            c = counts.setdefault(case.classes[axis], [0, 0, 0])
            c[0] += 1
            c[1] += label != "unknown"
            c[2] += label == ("wrong" if case.right else "correct")
        for name, (n, definite, opposite) in sorted(
            counts.items(), key=lambda kv: (kv[1][1] / kv[1][0], kv[0])
        ):
            lines.append(f"| {axis} | {name} | {n} | {definite} ({definite / n:.0%}) | {opposite} |")
    n = len(judged)
    definite = sum(label != "unknown" for _, label in judged)
    opposite = sum(label == ("wrong" if case.right else "correct") for case, label in judged)
    lines.append(f"| all | all | {n} | {definite} ({definite / max(n, 1):.0%}) | {opposite} |")
    return "\n".join(lines)
