"""Words as data for miners.verify: answer markers in other languages, and yes/no words.

    from miners.verify.markers import ANSWER_MARKERS, boolean_value
    [m.language for m in ANSWER_MARKERS][:3]   # -> ["zh", "ja", "ko"]
    boolean_value("Oui")                       # -> True
    boolean_value("falsch")                    # -> False

ANSWER_MARKERS: one row per language, the words that introduce a committed answer the way
"Answer:" and "The answer is" do in English (the English forms have their own rules in
miners.verify.rules). `words` are read before a colon ("Ответ: 12", "答案：C"), inside brackets
("【答案】C", "[Réponse] 12") or as a heading line ("## Antwort" with the value below); `copulas`
are read after the word ("答案是 C", "La réponse est 12", "Die Antwort lautet 12"), to the end of
the sentence. A word that also heads a worked solution ("解答" in Chinese) is only read before a
colon or in brackets with its value on the same line (`same_line`). Adding a language is adding a
row here, never code.

BOOLEAN_WORDS: the words that say yes/true and no/false, per language; a yes/no answer against a
True/False gold (or the other way round) compares by what it says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerMarker:
    language: str
    words: tuple[str, ...]  # the longest first where one contains another
    copulas: tuple[str, ...] = ()
    same_line: tuple[str, ...] = ()  # words whose value must stand on their own line


ANSWER_MARKERS: tuple[AnswerMarker, ...] = (
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
