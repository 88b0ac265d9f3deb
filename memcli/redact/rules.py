"""The secret formats memcli redacts: one table of (kind, regex, literal anchors).

Sources. The token formats are the providers' documented ones as collected by the maintained
scanners, re-expressed here (no code copied): gitleaks' default rule file (gitleaks/gitleaks,
``config/gitleaks.toml``, MIT; read at commit b58d3f10, 2026-07) and detect-secrets' plugins
(Yelp/detect-secrets, ``detect_secrets/plugins/*.py``, Apache-2.0; read at 5e141933, 2026-04),
narrowed where those tools trade precision for recall (their generic keyword and entropy rules
would flag git SHAs, UUIDs and hashes that agents handle all day) and widened where a transcript
differs from a source file (JSON-escaped quotes and newlines inside strings).

Why a curated table and not the scanners themselves: detect-secrets 1.5 with its default plugins
scanned 1.5 MB of the ingest benchmark's transcript events in 12 s (0.13 MB/s, measured with
``detect_secrets.core.scan.scan_line`` on this project's 2-core machine) and reported 13,276
"secrets" in them, nearly all from its entropy and keyword plugins; piped ingest has about 1 s
for 150 MB. gitleaks is a Go binary. What makes redaction cheap here is the anchor column:
literal strings, one of which every match contains, scanned for all rules at once
(memcli.redact).

Refreshing. Read the newest ``config/gitleaks.toml`` (``fetch`` the gitleaks repository, or
download the file from a release) and the detect-secrets plugins; for each rule whose provider
prefix is not below (``grep -o "keywords = .*" gitleaks.toml``), add a row: a regex for the
token, its literal anchors (a prefix is best; anchors may only hold characters JSON never
escapes: letters, digits, ``_ - . : = +`` and space) and a planted example in
tests/secret_samples.py. Then run tests/test_redact.py (every sample must be found through both
prefilters, raw, JSON-encoded and encoded twice) and the corpora test there: a new rule must find
nothing new in the corpora unless the finding is a real secret.

Invariants every rule keeps (tests/test_redact.py):

* every match *starts at* one of its ``anchors`` (the regex is only tried there), in the raw
  string; ``hs``/``hs_regex`` occur in every match in the raw string and in its JSON encoding;
* a replaced secret never re-matches (markers hold ``[``, which no token class admits).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

_Q = r"(?:\\?[\"'`])?"   # an optional quote, perhaps JSON-escaped (a backslash before it)


class Rule:
    """One format. ``anchors``: literals, one of which is in every match (lowercase and checked
    against the lowered text when ``caseless``), in the decoded text and in its JSON encoding.
    ``hs``: tighter literals for the Hyperscan prefilter over JSON bytes (default: the anchors),
    ``hs_regex``: a Hyperscan regex instead, for the rare rule no literal can anchor."""

    __slots__ = ("_regex", "anchors", "caseless", "flags", "group", "hs", "hs_regex", "kind", "pattern", "valid")

    def __init__(self, kind: str, pattern: str, anchors: tuple[str, ...], *, caseless: bool = False,
                 group: str | None = None, valid: Callable[[str], bool] | None = None, flags: int = 0,
                 hs: tuple[str, ...] = (), hs_regex: str | None = None):
        self.kind = kind
        self.pattern = pattern
        self.anchors = tuple(a.lower() for a in anchors) if caseless else anchors
        self.caseless = caseless
        self.group = group          # replace only this named group (else the whole match)
        self.valid = valid          # a further check on the secret
        self.flags = flags | (re.IGNORECASE if caseless else 0)
        self.hs = hs or self.anchors
        self.hs_regex = hs_regex
        self._regex = None

    def __repr__(self) -> str:
        return f"Rule({self.kind!r})"

    @property
    def regex(self) -> re.Pattern:
        """Compiled on first use: most inputs never need most rules."""
        if self._regex is None:
            self._regex = re.compile(self.pattern, self.flags)
        return self._regex

    def apply(self, text: str, counts: Counter, keep_length: bool = False) -> str:
        """``text`` with this rule's secrets replaced (counted in ``counts``).

        Every match starts at one of the rule's anchors, so the regex is only tried there
        (``match`` at each anchor found by ``str.find``): Python's ``re`` has no multi-literal
        search, and a scan of the whole string cost ~50 µs per KB per rule."""
        hay = text.lower() if self.caseless else text
        if len(hay) != len(text):   # lowering changed lengths (rare Unicode): positions would not map
            return self._apply_everywhere(text, counts, keep_length)
        starts = set()
        for anchor in self.anchors:
            i = hay.find(anchor)
            while i >= 0:
                starts.add(i)
                i = hay.find(anchor, i + 1)
        if not starts:
            return text
        match_at = self.regex.match
        pieces, last, n = [], 0, 0
        for start in sorted(starts):
            if start < last:
                continue
            match = match_at(text, start)
            if match is None:
                continue
            span = self._secret_span(match)
            if span is None:
                continue
            pieces.append(text[last:span[0]])
            pieces.append(fitted_marker(self.kind, span[1] - span[0]) if keep_length else f"[REDACTED:{self.kind}]")
            last = span[1]
            n += 1
        if not n:
            return text
        pieces.append(text[last:])
        counts[self.kind] += n
        return "".join(pieces)

    def _secret_span(self, match: re.Match) -> tuple[int, int] | None:
        secret = match.group(self.group) if self.group else match.group(0)
        if not secret or secret.startswith("[REDACTED") or (self.valid is not None and not self.valid(secret)):
            return None
        return match.span(self.group) if self.group else match.span()

    def _apply_everywhere(self, text: str, counts: Counter, keep_length: bool = False) -> str:
        n = 0

        def substitute(match: re.Match) -> str:
            nonlocal n
            span = self._secret_span(match)
            if span is None:
                return match.group(0)
            n += 1
            start = match.start()
            whole = match.group(0)
            marker = fitted_marker(self.kind, span[1] - span[0]) if keep_length else f"[REDACTED:{self.kind}]"
            return whole[:span[0] - start] + marker + whole[span[1] - start:]

        text = self.regex.sub(substitute, text)
        if n:
            counts[self.kind] += n
        return text


def fitted_marker(kind: str, length: int) -> str:
    """A marker exactly ``length`` characters long, for files that record character offsets
    (working-memory edits): ``[REDACTED:kind]`` padded with ``*``, or only ``*`` when the
    secret is shorter than the marker."""
    marker = f"[REDACTED:{kind}]"
    return marker + "*" * (length - len(marker)) if length >= len(marker) else "*" * length


# ---------------------------------------------------------------------- checks on a candidate

def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    total = len(text)
    return -sum(c / total * math.log2(c / total) for c in Counter(text).values())


_PLACEHOLDER_WORDS = ("example", "placeholder", "changeme", "your", "redacted", "xxxx", "****", "....", "dummy",
                      "secret", "password", "token", "sample", "insert", "replace", "<", ">")
_REFERENCE = re.compile(r"^(?:[A-Za-z_$][\w$]*(?:\.|\[|\(|::|->))+|^[A-Za-z_][\w]*\($")


def _looks_like_value(secret: str) -> bool:
    """An assigned value that is a literal credential, not a reference, path, word or number."""
    s = secret.strip()
    if len(s) < 6 or s.isdigit():
        return False
    low = s.lower()
    if low in ("true", "false", "null", "none", "nil", "undefined", "required", "optional", "string", "bytes"):
        return False
    if s[0] in "$%{<[(*#@&/~." or s.startswith(("http://", "https://", "file:")) or "${" in s or "{{" in s:
        return False
    if any(word in low for word in _PLACEHOLDER_WORDS) and entropy(s) < 3.5:
        return False
    if _REFERENCE.match(s) and not any(c.isdigit() for c in s.split(".")[0]):
        return False  # process.env.TOKEN, os.environ["X"], settings.SECRET_KEY, getpass(
    has_digit = any(c.isdigit() for c in s)
    has_alpha = any(c.isalpha() for c in s)
    has_other = any(not c.isalnum() for c in s)
    if not has_alpha:
        return len(s) >= 16 and entropy(s) >= 3.0  # e.g. a long hex or base64 run of digits
    if has_digit or has_other:
        return len(s) >= 8 or (has_digit and len(s) >= 6)
    # letters only: a word or an identifier (``Optional``, ``getpass``) unless long and mixed-case
    return len(s) >= 20 and s != s.lower() and s != s.upper() and entropy(s) >= 3.5


def _token_like(secret: str) -> bool:
    """A bearer/basic credential, not an English word: long enough, with a digit or mixed case."""
    s = secret.rstrip("=")
    if len(s) < 16:
        return False
    return any(c.isdigit() for c in s) or (s != s.lower() and s != s.upper() and entropy(s) >= 3.5)


_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "secret", "pw", "xxx", "xxxx", "changeme",
                               "mypassword", "yourpassword", "your_password", "your-password", "user", "username"})


def _url_password(secret: str) -> bool:
    s = secret.strip()
    if not s or s[0] in "$<{%*[" or "${" in s or s.lower() in _URL_PLACEHOLDERS or set(s) <= {"*", "x", "X", "."}:
        return False
    return not s.isdigit() or len(s) >= 6   # "host:8080@" is a port, not a password


# ---------------------------------------------------------------------- the table

# Assignments: a name that ends in one of these, then = : := => and a value.
_ASSIGNED = ("secret", "token", "password", "passwd", "passphrase", "api_key", "apikey", "api-key",
             "access_key", "accesskey", "secret_key", "private_key", "privatekey", "auth_key", "authkey",
             "credential", "credentials", "client_secret")
# prefilter over JSON bytes: the name, then the operator or a quote (JSON-escaped or not: a
# backslash); 8 variants a name, compiled in a third of the time of spelling out every quoting
_ASSIGN_HS = tuple(f"{word}{after}" for word in _ASSIGNED for after in ("=", ":", " =", " :", '"', "'", "`", "\\"))

RULES: tuple[Rule, ...] = (
    # -- blocks first: a private key's body would otherwise be cut up by the token rules
    Rule("private_key",
         r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
         r"(?:\\[rn]|\s)+(?:[A-Za-z-]+: [^\n]*?(?:\\[rn]|\n)+)*(?:\\[rn]|\s)*[A-Za-z0-9+/=]{16}"
         r".*?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\Z)"
         r"|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----.*?(?:---- END SSH2 ENCRYPTED PRIVATE KEY ----|\Z)"
         r"|PuTTY-User-Key-File-\d: .*?(?:Private-MAC: [0-9a-fA-F]+|\Z)",
         ("-----BEGIN", "---- BEGIN SSH2", "PuTTY-User-Key-File-"), flags=re.DOTALL,
         hs=("PRIVATE KEY", "PuTTY-User-Key-File-")),
    # -- fixed prefixes (gitleaks / detect-secrets / provider docs)
    Rule("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    Rule("openai_key", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    Rule("aws_access_key", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
         ("A3T", "AKIA", "ASIA", "ABIA", "ACCA")),
    Rule("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("gitlab_token",
         r"\b(?:(?:glpat|gldt|glrt|glptt|glcbt|gloas|glsoat|glft|glimt|glagent|glffct|glwt)-[A-Za-z0-9_\-]{20,300}"
         r"(?:\.[0-9a-z]{9})?|GR1348941[A-Za-z0-9_\-]{20,50})(?![\w-])",
         ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-", "glagent-",
          "glffct-", "glwt-", "GR1348941")),
    Rule("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
         ("hooks.slack.com",)),
    Rule("slack_token", r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
         ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe", "xapp-")),
    Rule("stripe_key", r"\b(?:(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,247}|whsec_[A-Za-z0-9]{24,})\b",
         ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "whsec_")),
    Rule("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![\w-])", ("AIza",)),
    # a Twilio auth token (32 hex) given right after its account SID: Client("AC…", "<token>")
    Rule("twilio_key", r"AC[0-9a-f]{32}\b[^\n]{1,80}?\b(?P<secret>[0-9a-f]{32})\b", ("AC",), group="secret",
         hs=tuple("AC" + c for c in "0123456789abcdef")),
    Rule("twilio_key", r"\b(?:SK[0-9a-fA-F]{32}|AC[0-9a-f]{32})\b", ("SK", "AC"),
         hs=tuple("SK" + c for c in "0123456789abcdefABCDEF") + tuple("AC" + c for c in "0123456789abcdef")),
    Rule("huggingface_token", r"\b(?:hf_|api_org_)[A-Za-z]{34}\b", ("hf_", "api_org_")),
    Rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    Rule("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", ("SG.",)),
    Rule("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", ("pypi-AgE",)),
    Rule("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ("shpat_", "shpca_", "shppa_", "shpss_")),
    Rule("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", ("dop_v1_", "doo_v1_", "dor_v1_")),
    Rule("linear_api_key", r"\blin_api_[A-Za-z0-9]{40}\b", ("lin_api_",)),
    Rule("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b", ("dapi",)),
    Rule("vault_token", r"\b(?:hvs\.[\w-]{90,120}|hvb\.[\w-]{138,300})(?![\w-])", ("hvs.", "hvb.")),
    Rule("postman_api_key", r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b", ("PMAK-",)),
    Rule("doppler_token", r"\bdp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}\b", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.")),
    Rule("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET-KEY-1",)),
    Rule("sentry_token", r"\b(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{40,})", ("sntryu_", "sntrys_")),
    Rule("grafana_token", r"\b(?:glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})(?![\w+/])",
         ("glc_", "glsa_")),
    Rule("pulumi_token", r"\bpul-[a-f0-9]{40}\b", ("pul-",)),
    Rule("square_token", r"\b(?:sq0atp-[\w-]{22,60}|sq0csp-[\w-]{43}|EAAA[\w-]{60})(?![\w-])", ("sq0atp-", "sq0csp-", "EAAA")),
    Rule("heroku_api_key", r"\bHRKU-AA[0-9a-zA-Z_-]{58}(?![\w-])", ("HRKU-AA",)),
    Rule("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{186}", ("ATATT3",)),
    Rule("telegram_bot_token", r"(?<=\d):AA[A-Za-z0-9_-]{33}(?![\w-])", (":AA",)),  # the bot id before it stays
    # -- no fixed prefix, but a literal anchor all the same
    Rule("azure_storage_key",
         r"(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
         ("AccountKey=", "SharedAccessKey="), group="secret"),
    Rule("gcp_service_account", r"private_key_id" + _Q + r"\s*[:=]\s*" + _Q + r"(?P<secret>[0-9a-f]{40})\b",
         ("private_key_id",), group="secret"),
    Rule("aws_secret_key",
         r"(?:secret_?access_?key|aws_?secret_?key)" + _Q + r"\s*(?::=|=>|[:=])\s*" + _Q
         + r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
         ("secret_access_key", "secretaccesskey", "secret_accesskey", "secretaccess_key", "aws_secret_key",
          "awssecretkey", "aws_secretkey", "awssecret_key"),
         caseless=True, group="secret"),
    Rule("bearer_token",
         r"authorization" + _Q + r" ?[:=] ?" + _Q + r" ?bearer +(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)",
         ("authorization",), caseless=True, group="secret", hs=("bearer ",)),
    Rule("bearer_token", r"bearer +(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)",
         ("bearer ",), caseless=True, group="secret", valid=_token_like),
    Rule("basic_auth",
         r"authorization" + _Q + r" ?[:=] ?" + _Q + r" ?basic +(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
         ("authorization",), caseless=True, group="secret"),
    Rule("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*", ("eyJ",)),
    Rule("url_password",
         r"(?<=[a-zA-Z0-9])://(?P<user>[^\s:/@?#'\"\\\[\]]{0,128}):(?P<secret>[^\s:/@?#'\"\\\[\]]{1,256})@(?=[\w\[])",
         ("://",), group="secret", valid=_url_password,
         hs_regex=r":(?:\\?/){2}[^\s/@\\\"]*:[^\s/@\\\"]+@"),
    Rule("secret_assignment",
         r"(?:" + "|".join(re.escape(w) for w in _ASSIGNED) + r")"
         + _Q + r" ?(?::=|=>|[:=]) ?" + _Q
         + r"(?P<secret>[^\s\"'`\\,;(){}\[\]<>]{6,300})",
         _ASSIGNED, caseless=True, group="secret", valid=_looks_like_value, hs=_ASSIGN_HS),
)

# ``{"Authorization": "Bearer <token>"}``: the key says what the value is
AUTH_VALUE = re.compile(r"^\s*(?P<scheme>bearer|basic|token)\s+(?P<secret>\S+)", re.IGNORECASE)


def secret_name(name: str) -> bool:
    """A field name whose value is a credential (``password``, ``DB_PASSWORD``, ``apiKey``...)."""
    low = name.lower()
    return low.endswith(_ASSIGNED) and not low.endswith(("_file", "_path"))


def secret_field_value(value: str) -> bool:
    """A field value that is a literal credential (see :func:`_looks_like_value`), one word."""
    return not any(c.isspace() for c in value) and _looks_like_value(value)
