"""Words as data for miners.verify: answer markers of every language listed, and yes/no words.

    from miners.verify.markers import ANSWER_MARKERS, boolean_value
    [m.language for m in ANSWER_MARKERS][:3]   # -> ["en", "zh", "ja"]
    boolean_value("Oui")                       # -> True
    boolean_value("falsch")                    # -> False

ANSWER_MARKERS: one row per language, the words that introduce a committed answer ("Answer:", "The
answer is", "Ответ:", "答案是"), read by the marker rules of miners.verify.rules. `words` are read
before a colon of any script or a table's cell border ("Ответ: 12", "答案：C", "| Antwort | 42 |"),
inside brackets ("【答案】C", "[Réponse] 12") or as a heading line ("## Antwort" with the value
below); `copulas` are read after the word ("答案是 C", "La réponse est 12", "Die Antwort lautet 12"),
to the end of the sentence. A word that also heads a worked solution ("解答" in Chinese) is only read
before a colon or in brackets with its value on the same line (`same_line`); a word strong enough
to be read anywhere on a line is `anywhere` ("Final Answer: 72" after other words); `talk` lists
the words that make a copula's sentence talk about the answer ("the answer is correct"). Adding a
language is adding a row here, never code.

NUMBER_MARKS: the thousands and decimal marks a language writes, where they are not English's: an
answer read by a marker of that language reads "1.234" or "2,500" by them.

BOOLEAN_WORDS: the words that say yes/true and no/false, per language; a yes/no answer against a
True/False gold (or the other way round) compares by what it says.

REFUSALS: the phrases of an answer that declines to give a value ("cannot be determined", "无法确定"),
per language: such an answer commits to no value (miners.verify.readable.is_refusal).

CONCLUDING_WORDS: the words that open a concluding sentence ("Therefore", "Por lo tanto", "Таким
образом", "因此"), per language: an output with no answer marker that ends on such a sentence states
its result there (miners.verify.prose.concluding, a weak form math-verify must confirm).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerMarker:
    language: str
    words: tuple[str, ...]  # the longest first where one contains another
    copulas: tuple[str, ...] = ()
    same_line: tuple[str, ...] = ()  # words whose value must stand on their own line
    # words read before a colon anywhere on a line ("So the Final Answer: 12"); the others only at a
    # line's start or after a sentence or a clause
    anywhere: tuple[str, ...] = ()
    # after a copula, words that make the sentence talk about the answer instead of giving one ("the
    # answer is correct"), as a regex; where none are listed, a value must follow (a number, math, an
    # option letter: "La réponse est correcte" gives none)
    talk: str = ""


# English talk about an answer: "the answer is correct", "the answer is as follows", "the answer is
# that ...", "the answer is not ..."
_ENGLISH_TALK = (
    r"correct|incorrect|right|wrong|not|as\s+follows|below|above|that|this|clear|obvious|indeed\s+correct|"
    r"likely|probably|given|found|shown|simply|in|to|still|also|then|therefore|thus|so|because|calculated|"
    r"computed|consistent|reasonable|the\s+same|same|written\s+in"
)

ANSWER_MARKERS: tuple[AnswerMarker, ...] = (
    AnswerMarker(
        "en",
        (
            "final answer",
            "only possible option",
            "correct option",
            "correct choice",
            "right option",
            "right choice",
            "best option",
            "best choice",
            "closest option",
            "final option",
            "final choice",
            "answer",
        ),
        ("is", "would be", "should be", "="),
        anywhere=("final answer",),
        talk=_ENGLISH_TALK,
    ),
    AnswerMarker(
        "zh", ("最终答案", "最終答案", "正确答案", "答案", "答"), ("是", "为", "為", "选", "選"), ("解答",)
    ),
    AnswerMarker("ja", ("最終的な答え", "最終解答", "答え", "正解"), ("は",), ("解答",)),
    AnswerMarker("ko", ("최종 답변", "최종 답", "정답", "답변", "답"), ("은", "는")),
    AnswerMarker("ru", ("окончательный ответ", "итоговый ответ", "ответ"), ("равен", "равна", "равно")),
    AnswerMarker("uk", ("остаточна відповідь", "відповідь"), ("дорівнює",)),
    AnswerMarker("de", ("endgültige antwort", "antwort"), ("ist", "lautet")),
    AnswerMarker("fr", ("réponse finale", "réponse"), ("est",)),
    AnswerMarker("es", ("respuesta final", "respuesta"), ("es",)),
    AnswerMarker("pt", ("resposta final", "resposta"), ("é",)),
    AnswerMarker("it", ("risposta finale", "risposta"), ("è",)),
    AnswerMarker("nl", ("eindantwoord", "antwoord"), ("is",)),
    AnswerMarker("pl", ("ostateczna odpowiedź", "odpowiedź"), ("to", "wynosi")),
    AnswerMarker("cs", ("konečná odpověď", "odpověď"), ("je",)),
    AnswerMarker("tr", ("son cevap", "cevap", "yanıt")),
    AnswerMarker("id", ("jawaban akhir", "jawaban", "jawapan"), ("adalah",)),
    AnswerMarker("vi", ("đáp án cuối cùng", "đáp án", "câu trả lời"), ("là",)),
    AnswerMarker("th", ("คำตอบสุดท้าย", "คำตอบ"), ("คือ",)),
    AnswerMarker("hi", ("अंतिम उत्तर", "उत्तर")),
    AnswerMarker("bn", ("চূড়ান্ত উত্তর", "উত্তর")),
    AnswerMarker("ar", ("الإجابة النهائية", "الإجابة", "الجواب"), ("هي", "هو")),
    AnswerMarker("fa", ("پاسخ نهایی", "پاسخ", "جواب")),
    AnswerMarker("he", ("תשובה סופית", "תשובה")),
    AnswerMarker("el", ("τελική απάντηση", "απάντηση"), ("είναι",)),
    AnswerMarker("sv", ("slutligt svar", "svaret", "svar"), ("är",)),
    AnswerMarker("sw", ("jibu la mwisho", "jibu"), ("ni",)),
)

# Words that open an explanation after an answer stated first (a base model's "42" over
# "Explanation: ..."), per language.
_EXPLANATIONS: tuple[tuple[str, str], ...] = (
    ("en", "explanation|reasoning|rationale|justification|solution|because|here's why|work|steps"),
    ("zh", "解析|解释|说明|理由|解答过程|因为"),
    ("ja", "説明|解説|理由"),
    ("ko", "설명|풀이|이유"),
    ("ru", "объяснение|решение|пояснение"),
    ("uk", "пояснення|розв'язання"),
    ("de", "erklärung|begründung|lösung|lösungsweg"),
    ("fr", "explication|justification|raisonnement"),
    ("es", "explicación|razonamiento|justificación"),
    ("pt", "explicação|justificativa|raciocínio"),
    ("it", "spiegazione|ragionamento|giustificazione"),
    ("nl", "uitleg|toelichting|redenering"),
    ("pl", "wyjaśnienie|uzasadnienie|rozwiązanie"),
    ("tr", "açıklama|çözüm"),
    ("id", "penjelasan|alasan"),
    ("vi", "giải thích|lời giải"),
    ("ar", "الشرح|التفسير|الحل"),
    ("hi", "व्याख्या|स्पष्टीकरण|हल"),
    ("th", "คำอธิบาย|เหตุผล"),
    ("el", "εξήγηση|αιτιολόγηση"),
    ("sv", "förklaring|motivering"),
)
EXPLANATION_WORDS: tuple[str, ...] = tuple(
    sorted({w for _, words in _EXPLANATIONS for w in words.split("|")}, key=lambda w: (-len(w), w))
)

# Number words of other languages than English (English ones are read exactly, by
# miners.verify.prose): 0 to 20, the tens, hundred and thousand. A text that holds one may state a
# number these readers do not compute, so it may state any gold (miners.verify.evidence reads
# generously). Per language, how they stand in a text: "word" whole words; "start" the start of a word
# (a language that joins number words or attaches endings: "dreiundzwanzig", "двадцать", "일곱입니다");
# "anywhere" (a language that attaches prefixes or writes no spaces: "وثلاثة", "สาม").
_NUMBER_WORD_ROWS: tuple[tuple[str, str, str], ...] = (
    ("de", "start", "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf zwanzig dreißig "
     "vierzig fünfzig sechzig siebzig achtzig neunzig hundert tausend"),
    ("fr", "word", "zéro deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze "
     "seize vingt trente quarante cinquante soixante cent mille"),
    ("es", "start", "cero dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince "
     "dieci veint treinta cuarenta cincuenta sesenta setenta ochenta noventa cien mil"),
    ("pt", "start", "zero dois duas três quatro cinco seis sete oito nove dez onze doze treze catorze "
     "quinze dezes dezo dezan vinte trinta quarenta cinquenta sessenta setenta oitenta noventa cem mil"),
    ("it", "start", "zero due tre quattro cinque sei sette otto nove dieci undici dodici tredici "
     "quattordici quindici sedici dicias diciotto dician venti trenta quaranta cinquanta cento mille"),
    ("nl", "start", "nul twee drie vier vijf zes zeven acht negen tien elf twaalf dertien veertien "
     "twintig dertig veertig vijftig zestig zeventig tachtig negentig honderd duizend"),
    ("sv", "start", "noll två tre fyra fem sex sju åtta nio tio elva tolv tjugo trettio fyrtio hundra tusen"),
    ("pl", "start", "zero jeden jedna dwa dwie trzy cztery pięć sześć siedem osiem dziewięć dziesięć "
     "jedena dwana dwadzie trzydzie sto tysi"),
    ("cs", "start", "nula jedna jeden dva dvě tři čtyři pět šest sedm osm devět deset jedenáct dvanáct "
     "dvacet třicet sto tisíc"),
    ("ru", "start", "ноль один одна два две три четыр пят шест сем восем девят десят одиннадцат "
     "двенадцат двадцат тридцат сорок сто тысяч"),
    ("uk", "start", "нуль один одна два дві три чотир п'ят шіст сім вісім дев'ят десят двадцят сто тисяч"),
    ("el", "start", "μηδέν ένα δύο τρία τέσσερ πέντε έξι επτά οκτώ εννέα δέκα έντεκα δώδεκα είκοσι εκατό "
     "χίλι"),
    ("tr", "start", "sıfır bir iki üç dört beş altı yedi sekiz dokuz on yirmi otuz kırk elli yüz bin"),
    ("id", "word", "nol satu dua tiga empat lima enam tujuh delapan sembilan sepuluh sebelas belas puluh "
     "ratus ribu"),
    ("vi", "word", "không một hai ba bốn năm sáu bảy tám chín mười trăm nghìn"),
    ("sw", "word", "sifuri moja mbili tatu nne tano sita saba nane tisa kumi ishirini mia elfu"),
    ("ar", "anywhere", "صفر واحد اثنان اثنا ثلاث أربع خمس ست سبع ثمان تسع عشر مائة ألف"),
    ("fa", "word", "صفر یک دو سه چهار پنج شش هفت هشت نه ده بیست صد هزار"),
    ("he", "anywhere", "אפס אחד שניים שתיים שלוש ארבע חמש שש שבע שמונה תשע עשר עשרים מאה אלף"),
    ("hi", "word", "शून्य एक दो तीन चार पांच पाँच छह सात आठ नौ दस ग्यारह बारह बीस सौ हज़ार"),
    ("th", "anywhere", "ศูนย์ หนึ่ง สอง สาม สี่ ห้า หก เจ็ด แปด เก้า สิบ ร้อย พัน"),
    ("ko", "start", "영 하나 둘 셋 넷 다섯 여섯 일곱 여덟 아홉 열 스물 백 천"),
)  # fmt: skip
# A number word in ASCII letters only may be an English word or begin one ("once", "mil" in "miles",
# "sto" in "store", "bir" in "bird", "on", "due"): it counts only in a text that holds an answer marker
# of its language. A word with any other letter ("zwölf", "três", "два", "สาม") counts in any text.
NUMBER_WORD_PLACES = ("word", "start", "anywhere")


def _number_words(how: str, ascii_only: bool, language: str | None = None) -> tuple[str, ...]:
    words = {
        w
        for code, placed, row in _NUMBER_WORD_ROWS
        if placed == how and language in (None, code)
        for w in row.split()
        if w.isascii() == ascii_only
    }
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


# {placement: its number words that count in any text}
NUMBER_WORDS_ANY_TEXT: dict[str, tuple[str, ...]] = {h: _number_words(h, False) for h in NUMBER_WORD_PLACES}
# (its answer-marker words, placement, its number words in ASCII letters), per language with a marker
NUMBER_WORDS_IN_LANGUAGE: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = tuple(
    (marker.words, placed, _number_words(placed, True, lang))
    for lang, placed, _ in _NUMBER_WORD_ROWS
    for marker in ANSWER_MARKERS
    if marker.language == lang and _number_words(placed, True, lang)
)

# The thousands and decimal marks of the languages whose decimal mark is a comma, as (thousands,
# decimal): an answer a marker of one of them read states "1.234" as 1234 (where the thousands mark is
# a dot) and "2,500" as 2.5. English and the languages that write as it does are not listed: their
# readings stay open both ways where a numeral could be either (miners.verify.fast.other_grouping).
NUMBER_MARKS: dict[str, tuple[str, str]] = {
    **{code: (".", ",") for code in ("de", "es", "pt", "it", "nl", "id", "tr", "vi", "el")},
    **{code: (" ", ",") for code in ("fr", "ru", "uk", "pl", "cs", "sv")},
}

# Words that join alternatives ("12 or 15", "x = 2 oder x = 3"): an answer that lists alternatives
# against a gold of one value commits to none of them (miners.verify.evidence). Per language, as data.
_ALTERNATIVES: tuple[tuple[str, str], ...] = (
    ("en", "or|either"),
    ("de", "oder"),
    ("fr", "ou"),
    ("es", "o|ó"),
    ("pt", "ou"),
    ("it", "o|oppure"),
    ("nl", "ofwel"),
    ("ru", "или|либо"),
    ("uk", "або|чи"),
    ("pl", "lub|albo"),
    ("cs", "nebo"),
    ("tr", "veya|ya da"),
    ("id", "atau"),
    ("vi", "hoặc"),
    ("th", "หรือ"),
    ("hi", "या|अथवा"),
    ("ar", "أو"),
    ("fa", "یا"),
    ("he", "או"),
    ("el", "ή"),
    ("sv", "eller"),
    ("sw", "au"),
    ("zh", "或者|或是|或"),
    ("ja", "または|もしくは"),
    ("ko", "또는|혹은"),
)
ALTERNATIVE_WORDS: tuple[str, ...] = tuple(
    sorted({w for _, words in _ALTERNATIVES for w in words.split("|")}, key=lambda w: (-len(w), w))
)

# Words that open a concluding sentence, per language ("|" between words; a word of a spaced script
# is read as a whole word, one of an unspaced script anywhere). A word that is also an everyday word
# of another language listed here is left out (German "also", Portuguese "logo").
_CONCLUDING: tuple[tuple[str, str], ...] = (
    ("en", "therefore|thus|so|hence|in total|altogether|in conclusion|finally|total|answer|which is"),
    ("fr", "donc|ainsi|en conclusion|au total|en fin de compte|finalement|par conséquent"),
    ("es", "por lo tanto|por tanto|entonces|así que|en total|en conclusión|finalmente"),
    ("ca", "per tant|així doncs|doncs|en total"),
    ("pt", "portanto|então|assim|no total|em conclusão|finalmente|por isso"),
    ("it", "quindi|pertanto|dunque|in totale|in conclusione|infine"),
    ("de", "daher|somit|folglich|deshalb|insgesamt"),
    ("nl", "dus|daarom|in totaal|in andere woorden|kortom"),
    ("sv", "alltså|därför|totalt"),
    ("pl", "zatem|więc|dlatego|łącznie"),
    ("cs", "tedy|proto|celkem"),
    ("ru", "таким образом|итак|поэтому|следовательно|итого|в итоге"),
    ("uk", "отже|таким чином|тому"),
    ("el", "επομένως|άρα"),
    ("tr", "bu nedenle|dolayısıyla|sonuç olarak"),
    ("id", "jadi|oleh karena itu|dengan demikian"),
    ("vi", "do đó|vì vậy|vậy|tổng cộng"),
    ("sw", "kwa hiyo|hivyo"),
    ("zh", "因此|所以|结论|总共|答案|综上|故|∴"),
    ("ja", "したがって|従って|よって|つまり"),
    ("ko", "따라서|그러므로|결론적으로"),
    ("ar", "لذا|لذلك|إذن"),
    ("hi", "इसलिए|अतः"),
)
CONCLUDING_WORDS: tuple[str, ...] = tuple(
    sorted({w for _, words in _CONCLUDING for w in words.split("|")}, key=lambda w: (-len(w), w))
)

# (language, the words that say yes/true, the words that say no/false), space-separated
_YES_NO: tuple[tuple[str, str, str], ...] = (
    ("en", "true yes correct", "false no incorrect"),
    ("fr", "vrai oui", "faux non"),
    ("de", "wahr ja richtig", "falsch nein"),
    ("es", "verdadero sí si cierto", "falso"),
    ("pt", "verdadeiro sim", "falso não"),
    ("it", "vero sì", "falso"),
    ("nl", "waar", "onwaar nee"),
    ("ru", "истина да верно правда", "ложь нет неверно"),
    ("uk", "так правильно", "ні хибно"),
    ("zh", "是 对 對 正确 正確 真 成立", "否 不是 错 錯 错误 錯誤 假 不成立"),
    ("ja", "はい 正しい", "いいえ 誤り 正しくない"),
    ("ko", "예 네 참 맞다 맞습니다", "아니요 아니오 거짓 틀리다 틀립니다"),
    ("hi", "हाँ हां सत्य सही", "नहीं असत्य गलत"),
    ("id", "benar ya betul", "salah tidak bukan"),
    ("tr", "doğru evet", "yanlış hayır"),
    ("vi", "đúng có", "sai không"),
    ("ar", "نعم صحيح", "لا خطأ"),
    ("pl", "tak prawda", "nie fałsz"),
    ("el", "ναι αληθές σωστό", "όχι ψευδές λάθος"),
)
BOOLEAN_WORDS: dict[bool, tuple[str, ...]] = {
    True: tuple(dict.fromkeys(w for _, yes, _ in _YES_NO for w in yes.split())),
    False: tuple(dict.fromkeys(w for _, _, no in _YES_NO for w in no.split())),
}
_BOOLEAN_OF = {w: value for value, words in BOOLEAN_WORDS.items() for w in words}
_WRAP_RE = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{([^{}]*)\}")


def boolean_value(answer: str) -> bool | None:
    """What a whole yes/no answer says (True for "Yes", "\\\\text{True}", "**oui**."), or None when the
    answer is anything but one such word."""
    s = _WRAP_RE.sub(r"\1", answer).strip().strip("*_`$ \t\"'“”.!。！").strip()
    return _BOOLEAN_OF.get(s.lower())


def covering_pieces(words: Iterable[str], pieces: Iterable[str]) -> tuple[str, ...]:
    """pieces, and each of words that none of them is in: every word holds one of what is returned, so
    a text that holds none of it holds none of the words (a few substring searches, each skipping in C
    to its piece, where a search for the words tries every place one of them may start)."""
    chosen = tuple(pieces)
    return chosen + tuple(w for w in dict.fromkeys(words) if not any(p in w for p in chosen))


class Substrings:
    """Which of some strings a text holds, by substring tests (`s in text`, each skipping in C): the
    ASCII strings each in turn; a string with a character beyond ASCII only where the text holds its
    first such character. A search for one character is cheaper than one for a word, and most texts
    hold few of another script's characters ("×" in an English output, Cyrillic in a Russian one:
    the Chinese and Korean words are never searched for)."""

    def __init__(self, strings: Iterable[str]):
        strings = tuple(dict.fromkeys(strings))
        self.ascii = tuple(s for s in strings if s.isascii())
        by_char: dict[str, list[str]] = {}
        for s in strings:
            if not s.isascii():
                by_char.setdefault(next(c for c in s if not c.isascii()), []).append(s)
        self.by_char = tuple((c, tuple(ss)) for c, ss in by_char.items())

    def any_in(self, text: str) -> bool:
        for s in self.ascii:
            if s in text:
                return True
        if text.isascii():
            return False
        for c, strings in self.by_char:
            if c in text:
                for s in strings:
                    if s in text:
                        return True
        return False

    def found_in(self, text: str) -> list[str]:
        """The strings text holds (the ASCII ones first)."""
        found = [s for s in self.ascii if s in text]
        if not text.isascii():
            found += [s for c, strings in self.by_char if c in text for s in strings if s in text]
        return found


def opening_chars(words: Iterable[str]) -> str:
    """A lookahead for the first characters of words ("(?=[abc])"), to put before a pattern of those
    words that opens with a lookbehind or a \\b: Python's re finds no first character of such a
    pattern on its own and tries it at every position; with this it skips to the places where one
    of the words can start (the same matches, a few times faster on a long output)."""
    return "(?=[" + "".join(re.escape(c) for c in sorted({w[0] for w in words if w})) + "])"


def word_trie(words: Iterable[str], space: str = r"\s+") -> str:
    """A pattern for any one of words, as a trie: "seven(?:t(?:een|y))?" for seven, seventeen and
    seventy. An alternation of many words ("seven|seventeen|seventy|six|...") is tried word by word
    at every place it may start; the trie reads each character once. At a branch the longer word is
    tried first, so it matches what an alternation of the words, the longest first, matches. A space
    in a word stands for `space`."""
    root: dict = {}
    for word in words:
        node = root
        for c in word:
            node = node.setdefault(c, {})
        node[""] = {}  # a word ends here

    def pattern(node: dict) -> str:
        branches = [
            (space if c == " " else re.escape(c)) + pattern(rest) for c, rest in sorted(node.items()) if c
        ]
        if not branches:
            return ""
        if len(branches) == 1:
            return "(?:" + branches[0] + ")?" if "" in node else branches[0]
        return "(?:" + "|".join(branches) + ")" + ("?" if "" in node else "")

    return pattern(root)


def marker_words() -> list[tuple[str, AnswerMarker]]:
    """Every marker word with its row, the longest first (so "réponse finale" is tried before "réponse")."""
    pairs = [(w, m) for m in ANSWER_MARKERS for w in (*m.words, *m.same_line)]
    return sorted(pairs, key=lambda p: -len(p[0]))


# A model's rating of its own answer ("my confidence level is 99%", "I am 100% sure"), per language:
# `nouns` name the rating ("confidence", "certainty"); `adjectives` say the model is sure of its
# answer ("confident", "sure"). A value the model rates itself with is never its answer
# (miners.verify.selfrating). Lowercase; matched as whole words in spaced scripts.
_SELF_RATING: tuple[tuple[str, str, str], ...] = (
    (
        "en",
        "confidence|certainty|probability that i|probability that my|likelihood that my",
        "confident|sure|certain",
    ),
    ("fr", "confiance|certitude", "confiant|confiante|sûr|sûre|certain|certaine"),
    ("de", "konfidenz|zuversicht|sicherheit|gewissheit", "zuversichtlich|sicher"),
    ("es", "confianza|certeza|seguridad", "seguro|segura|confiado|confiada"),
    ("pt", "confiança|certeza", "confiante|seguro|segura|certo|certa"),
    ("it", "fiducia|certezza|confidenza", "sicuro|sicura|certo|certa"),
    ("nl", "zekerheid|vertrouwen", "zeker"),
    ("ru", "уверенность|уверенности|уверенностью|достоверность", "уверен|уверена"),
    ("uk", "впевненість|впевненості", "впевнений|впевнена"),
    ("pl", "pewność|pewności", "pewny|pewna|pewien"),
    ("tr", "güven|emin olma", "eminim|emin"),
    ("id", "keyakinan|tingkat kepercayaan", "yakin"),
    ("vi", "độ tin cậy|mức độ tự tin", "chắc chắn|tự tin"),
    ("zh", "置信度|信心|把握|确信度|確信度", "确信|確信|肯定|有信心"),
    ("ja", "確信度|自信度|信頼度", "確信|自信"),
    ("ko", "신뢰도|확신도", "확신"),
)
SELF_RATING_NOUNS: tuple[str, ...] = tuple(w for _, nouns, _ in _SELF_RATING for w in nouns.split("|"))
SELF_RATING_ADJECTIVES: tuple[str, ...] = tuple(w for _, _, adj in _SELF_RATING for w in adj.split("|"))


# An answer that declines to give a value ("cannot be determined", "I don't know"), per language: it
# commits to no value (labelling convention 6: it never equals a gold), so against a number gold the
# verdict is rule (b)'s. Lowercase; an answer is a refusal where, with its math segments and markup
# set aside, it opens with one of these and holds no digit.
_REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "en",
        "cannot be determined|can't be determined|can not be determined|cannot be found|"
        "cannot be calculated|cannot be computed|cannot be answered|cannot determine|can't determine|"
        "is not determined|is undetermined|not enough information|insufficient information|"
        "not possible to determine|impossible to determine|i don't know|i do not know|"
        "there is no answer|no answer|no solution|undefined|none",
    ),
    ("fr", "ne peut pas être déterminé|impossible à déterminer|je ne sais pas|pas de solution"),
    ("de", "kann nicht bestimmt werden|nicht bestimmbar|ich weiß es nicht|keine lösung"),
    ("es", "no se puede determinar|no puede determinarse|no lo sé|no hay solución"),
    ("ru", "невозможно определить|нельзя определить|не знаю|нет решения"),
    ("zh", "无法确定|不能确定|无法计算|不知道|无解"),
)
REFUSALS: tuple[str, ...] = tuple(w for _, words in _REFUSALS for w in words.split("|"))
