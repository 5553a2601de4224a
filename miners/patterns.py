"""The one documented place for the text patterns miners act on.

    from miners.patterns import names_own_model, strip_hedging_tail, fix_final_answer_line
    names_own_model("As an AI developed by OpenAI, I cannot ...")   # -> "AI developed by OpenAI"
    strip_hedging_tail("... Final answer: 7\\nI hope it is correct.")
    # -> ("... Final answer: 7", "I hope ...")

Three groups, each a list of regular expressions with the reason it exists:

1. IDENTITY_PATTERNS — an answer that names its own model or maker ("As an AI
   developed by OpenAI", "I am Claude", "I'm ChatGPT", "trained by Google").
   The battle miner never makes such an opponent answer the chosen side: the
   model would learn to call itself another company's model. Matched
   case-insensitively anywhere in the answer. A model name merely mentioned
   ("ChatGPT is a chatbot") does not match: the patterns need a first-person
   claim ("I am", "I'm", "my name is", "as a/an ... model") or a made-by
   phrase ("developed/created/trained/built by <maker>").
2. HEDGING_TAIL_PATTERNS — closing sentences that add nothing and that the
   style miner removes: "I hope it is correct.", "I hope this helps!", "Let me
   know if you have any other questions." and kin. Only a *tail* is removed:
   the sentences must end the answer (several may follow one another).
3. Final-answer line rules — every canonical chosen answer ends with one line
   `Final answer: X` (the cross-team contract the verifier reads).
   FINAL_ANSWER_LINE is that form; MALFORMED_FINAL_ANSWER catches the usual
   near misses ("**Final Answer:** 72", "The final answer is $\\boxed{72}$.",
   "Final answer - 72", "FINAL ANSWER: 72"), which the style miner rewrites.
   A prompt asks for the line when ASKS_FOR_FINAL_ANSWER matches its user
   turns. The reference-solution rewrites of the self-repair miner
   (gold_repair) live here too: GSM8K calculator marks `<<48/2=24>>` removed
   and `#### 72` turned into `Final answer: 72`; a MATH solution keeps its text
   and gains a `Final answer: <gold>` line.
"""

from __future__ import annotations

import re

# -- 1. identity ----------------------------------------------------------------

# Model and maker names an opponent in the arena may use for itself.
MODEL_NAMES = (
    r"chat\s?gpt",
    r"gpt-?\d(?:\.\d)?(?:o|-?turbo|-?mini)?",
    r"claude",
    r"gemini",
    r"bard",
    r"llama",
    r"mistral",
    r"mixtral",
    r"qwen",
    r"tongyi",
    r"deepseek",
    r"ernie",
    r"grok",
    r"copilot",
    r"command[- ]r",
    r"gemma",
    r"kimi",
    r"chatglm",
    r"doubao",
)
MAKER_NAMES = (
    r"openai",
    r"anthropic",
    r"google(?: deepmind| ai)?",
    r"deepmind",
    r"meta(?: ai)?",
    r"facebook",
    r"microsoft",
    r"mistral ai",
    r"alibaba(?: cloud)?",
    r"baidu",
    r"x\.?ai",
    r"cohere",
    r"deepseek",
    r"zhipu(?: ai)?",
    r"moonshot(?: ai)?",
    r"01\.ai",
    r"bytedance",
    r"tencent",
    r"amazon",
)
_MODELS = "|".join(MODEL_NAMES)
_MAKERS = "|".join(MAKER_NAMES)

IDENTITY_PATTERNS: list[re.Pattern] = [
    # "As an AI developed by OpenAI", "I was trained by Google", "a language model created by Anthropic"
    re.compile(
        rf"\b(?:developed|created|trained|built|made|designed|programmed)\s+by\s+(?:the\s+)?(?:{_MAKERS})\b",
        re.IGNORECASE,
    ),
    # "I am Claude", "I'm ChatGPT", "my name is Gemini", "I am a GPT-4 model", "I'm an OpenAI model"
    re.compile(
        rf"\b(?:i\s+am|i'm|i’m|my\s+name\s+is)\s+(?:an?\s+|the\s+)?(?:{_MODELS}|{_MAKERS})\b", re.IGNORECASE
    ),
    # "As ChatGPT, I ...", "As a Claude model", "as an OpenAI language model"
    re.compile(
        rf"\bas\s+(?:an?\s+)?(?:{_MODELS}|{_MAKERS})(?:\s+(?:language\s+)?model|\s+assistant|,)",
        re.IGNORECASE,
    ),
    # "I'm a large language model, trained by Google" is caught by the first pattern; this one
    # catches the possessive form: "OpenAI's language model", "Anthropic's AI assistant" said of itself.
    re.compile(rf"\b(?:i\s+am|i'm|i’m)\s+(?:{_MAKERS})['’]s\b", re.IGNORECASE),
]


def names_own_model(text: str) -> str | None:
    """The phrase where `text` names its own model or maker, or None."""
    for pattern in IDENTITY_PATTERNS:
        m = pattern.search(text)
        if m:
            return m.group(0)
    return None


# -- 2. hedging tails -----------------------------------------------------------

HEDGING_TAIL_PATTERNS: list[re.Pattern] = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"i\s+hope\s+(?:it|this|that|my\s+(?:answer|solution|response))\s+(?:is|was)\s+(?:correct|right|accurate)",
        r"i\s+hope\s+(?:this|that|it)\s+helps(?:\s+\w+)?",
        r"hope\s+(?:this|that|it)\s+helps(?:\s+\w+)?",
        r"i\s+hope\s+(?:this|that|my)\s+(?:answer|explanation|solution|response)\s+(?:helps|is\s+helpful)",
        r"(?:please\s+)?let\s+me\s+know\s+if\s+you\s+(?:have|need)\s+(?:any\s+)?(?:other|more|further|additional)?"
        r"\s*(?:questions|help|clarification|assistance)(?:\s+\w+){0,4}",
        r"(?:please\s+)?(?:feel\s+free\s+to|don['’]t\s+hesitate\s+to)\s+ask(?:\s+\w+){0,8}",
        r"i\s+(?:think|believe)\s+(?:this|that|it|my\s+answer)\s+is\s+(?:correct|right)",
        r"(?:but\s+)?i\s+(?:might|may|could)\s+be\s+wrong",
        r"good\s+luck(?:\s+with\s+\w+(?:\s+\w+){0,3})?",
    )
]
# A sentence ending: ., !, ? (possibly repeated), optional closing emoji/smiley, then end of text.
_TAIL_END = r"\s*[.!?]*\s*(?::\)|😊|🙂)?\s*$"
_TAIL_RES = [
    re.compile(r"(?:^|(?<=[\s.!?:)]))(" + p.pattern + r")" + _TAIL_END, re.IGNORECASE)
    for p in HEDGING_TAIL_PATTERNS
]


def strip_hedging_tail(text: str) -> tuple[str, str | None]:
    """(text without its hedging tail, the removed tail) — or (text, None) when it has none.

    Removes tail sentences repeatedly ("I hope this helps! Let me know if you
    have any questions."), then trailing whitespace. A text that would be left
    empty is returned unchanged: a hedge alone is no answer to fix.
    """
    out = text.rstrip()
    removed = []
    while True:
        for tail_re in _TAIL_RES:
            m = tail_re.search(out)
            if m:
                removed.append(out[m.start(1) :].strip())
                out = out[: m.start(1)].rstrip()
                break
        else:
            break
    if not removed or not out.strip():
        return text, None
    return out, " ".join(reversed(removed))


# -- 3. final-answer line -------------------------------------------------------

FINAL_ANSWER_PREFIX = "Final answer: "
# The canonical form: the last non-empty line is exactly "Final answer: X" (X not empty).
FINAL_ANSWER_LINE = re.compile(r"^Final answer: (\S(?:.*\S)?)$")
# Near misses on the last line: markdown bold, "The final answer is", other separators, other case.
MALFORMED_FINAL_ANSWER = re.compile(
    r"^\s*(?:[*_#>]+\s*)*(?:so,?\s+|thus,?\s+|therefore,?\s+)?(?:the\s+)?final\s+answer"
    r"(?:\s+is)?\s*(?:[*_]+\s*)?[:\-–—=]?\s*(?:[*_]+\s*)?(?:is\s+)?(?P<answer>.+?)\s*$",
    re.IGNORECASE,
)
# A prompt asks for the line when its user turns mention a final answer line.
ASKS_FOR_FINAL_ANSWER = re.compile(r"final\s+answer\s*:", re.IGNORECASE)
# An answer stated explicitly somewhere in the text: only then is a missing final-answer line added
# (the verifier's extract_answer falls back to the last sentence, which is no answer to restate).
EXPLICIT_ANSWER_MARKER = re.compile(
    r"\\boxed\{|\bthe\s+(?:final\s+)?answer\s+is\b|^\s*####\s*\S", re.IGNORECASE | re.MULTILINE
)
_BOXED_WRAP = re.compile(r"^\$*\s*\\boxed\{(?P<inner>.*)\}\s*\$*$")
_RESTATED = re.compile(r"^(?:the\s+)?final\s+answer\s+is\s*:?\s*", re.IGNORECASE)
_DOLLARS = re.compile(r"^\$+(?P<inner>[^$]+)\$+$")


def final_answer_line(answer: str) -> str:
    return f"{FINAL_ANSWER_PREFIX}{answer.strip()}"


def last_line(text: str) -> str:
    lines = [ln for ln in text.rstrip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def has_final_answer_line(text: str) -> bool:
    return FINAL_ANSWER_LINE.match(last_line(text)) is not None


def asks_for_final_answer(prompt_text: str) -> bool:
    return ASKS_FOR_FINAL_ANSWER.search(prompt_text) is not None


def clean_answer(answer: str) -> str:
    """The answer of a malformed line without its wrapping: markdown, $…$, \\boxed{…}, a final period."""
    a = answer.strip().strip("*_").strip()
    # "Final Answer: The final answer is $72$." (the Minerva form) says it twice.
    a = _RESTATED.sub("", a).strip().strip("*_").strip()
    if a.endswith("."):  # the sentence's full stop, never part of an answer
        a = a[:-1].rstrip()
    for _ in range(2):
        m = _BOXED_WRAP.match(a) or _DOLLARS.match(a)
        if m:
            a = m.group("inner").strip()
    return a


def fix_final_answer_line(text: str, extract=None) -> tuple[str, str] | None:
    """(fixed text, rule) for a text whose final-answer line is malformed or missing; None if it is fine
    or cannot be fixed.

    Malformed: the last non-empty line is a near miss (MALFORMED_FINAL_ANSWER) -> replaced by the
    canonical line. Missing: the text states its answer explicitly (EXPLICIT_ANSWER_MARKER: \\boxed{},
    "The answer is", "#### X") and `extract(text)` (the verifier's extract_answer) reads it -> the
    canonical line appended.
    """
    body = text.rstrip()
    last = last_line(body)
    if FINAL_ANSWER_LINE.match(last):
        return None
    m = MALFORMED_FINAL_ANSWER.match(last)
    if m:
        answer = clean_answer(m.group("answer"))
        if answer:
            return body[: body.rfind(last)] + final_answer_line(answer), "final-answer line reformatted"
    m = GSM8K_ANSWER_LINE.match(last)
    if m:
        return body[: body.rfind(last)] + final_answer_line(
            m.group("answer")
        ), "final-answer line reformatted"
    if extract is not None and EXPLICIT_ANSWER_MARKER.search(body):
        answer = extract(body)
        if answer and answer.strip():
            return f"{body}\n\n{final_answer_line(answer)}", "final-answer line added"
    return None


# -- reference solutions in the model's answer style (gold_repair) --------------------

GSM8K_CALCULATOR_MARK = re.compile(r"<<[^<>]*>>")
GSM8K_ANSWER_LINE = re.compile(r"^\s*####\s*(?P<answer>.+?)\s*$", re.MULTILINE)


def gsm8k_solution_in_answer_style(solution: str) -> str:
    """A GSM8K reference solution as the model answers: no `<<48/2=24>>` marks, `#### 72` -> final line."""
    text = GSM8K_CALCULATOR_MARK.sub("", solution).replace("\r\n", "\n")
    matches = list(GSM8K_ANSWER_LINE.finditer(text))
    if not matches:
        return text.strip()
    m = matches[-1]
    head = text[: m.start()].rstrip()
    return f"{head}\n{final_answer_line(m.group('answer'))}" if head else final_answer_line(m.group("answer"))


def math_solution_in_answer_style(solution: str, gold: str) -> str:
    """A MATH reference solution with a `Final answer: <gold>` line appended (its text kept)."""
    return f"{solution.replace(chr(13) + chr(10), chr(10)).rstrip()}\n\n{final_answer_line(gold)}"


def solution_in_answer_style(dataset: str, solution: str, gold: str) -> str:
    if dataset == "gsm8k":
        return gsm8k_solution_in_answer_style(solution)
    return math_solution_in_answer_style(solution, gold)
