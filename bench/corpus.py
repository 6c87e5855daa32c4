"""The benchmark corpus: 2000 request targets built from a fixed seed, the
same bytes on every machine: 80 % plain ASCII, 15 % percent-encoded UTF-8,
5 % malformed (hostile or broken targets a strict parser rejects).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Final, Literal, NamedTuple
from urllib.parse import quote, quote_plus

import urlguard

Kind = Literal["plain", "encoded", "malformed"]
KINDS: Final[tuple[Kind, ...]] = ("plain", "encoded", "malformed")

SIZE: Final = 2000
SEED: Final = 20240607
SHARES: Final[dict[Kind, float]] = {"plain": 0.80, "encoded": 0.15, "malformed": 0.05}

_WORDS: Final = (
    "shoes", "red", "summer", "sale", "laptop", "coffee", "garden", "travel", "music",
    "books", "kitchen", "sports", "winter", "jacket", "phone", "camera", "desk", "lamp",
    "wireless", "organic", "vintage", "classic", "outdoor", "running", "black", "blue",
)  # fmt: skip
_RESOURCES: Final = ("users", "orders", "products", "invoices", "carts", "reviews", "teams")
_SORTS: Final = ("price_asc", "price_desc", "newest", "rating", "relevance")
_COLORS: Final = ("red", "black", "white", "navy", "green", "beige")
_SIZES: Final = ("xs", "s", "m", "l", "xl")
_ASSETS: Final = ("app", "vendor", "main", "runtime", "polyfills", "styles")
_IMAGE_SIZES: Final = ("thumb", "small", "medium", "large", "original")
_STATIC: Final = ("/", "/favicon.ico", "/robots.txt", "/health", "/sitemap.xml", "/login")
_SOURCES: Final = ("newsletter", "twitter", "google", "partner", "email")
_DIGESTS: Final = ("daily", "weekly", "monthly", "never")

# Text as people type it: accents, other scripts, spaces, an emoji.
_TITLES: Final = (
    "Café", "São Paulo", "Zürich", "Crème brûlée", "Москва", "東京", "naïve", "Ελλάδα",
    "Düsseldorf", "Málaga", "Kraków", "İstanbul", "北京", "Ñandú", "Smørrebrød", "Straße",
    "München", "Señor", "Österreich", "Reykjavík", "日本語", "Ærø", "Łódź", "Français",
)  # fmt: skip
_PHRASES: Final = (
    "café au lait", "new york hotels", "São Paulo weather", "crème brûlée recipe",
    "zürich to münchen", "東京 ramen", "best pizza near me", "naïve bayes", "Ελλάδα beaches",
    "red shoes size 42", "50% off", "a & b", "c++ tutorial", "rock 'n' roll", "👍 emoji",
)  # fmt: skip
_NAMES: Final = ("Jürgen Müller", "José García", "Zoë Brontë", "Søren Kierkegaard", "李 小龍")
_FILES: Final = ("résumé 2024.pdf", "Q3 report (final).xlsx", "photo 001.jpg", "naïve plan.txt")
_LANGS: Final = ("fr", "de", "pt", "ja", "el", "es", "ru")


def _slug(rng: random.Random, words: int = 3) -> str:
    return "-".join(rng.choice(_WORDS) for _ in range(words))


def _hex(rng: random.Random, digits: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(digits))


def _uuid(rng: random.Random) -> str:
    return "-".join(_hex(rng, n) for n in (8, 4, 4, 4, 12))


def _plain(rng: random.Random) -> str:
    """An ASCII target with no '%' and no '+': what most traffic looks like."""
    n = rng.randrange(12)
    uid = rng.randrange(1, 10**6)
    if n == 0:
        limit, page = rng.choice((10, 20, 50)), rng.randrange(1, 30)
        return f"/api/v1/users/{uid}/orders?limit={limit}&page={page}&status=shipped"
    if n == 1:
        return f"/api/v2/{rng.choice(_RESOURCES)}/{uid}?fields=id,name,updated_at&expand=owner"
    if n == 2:
        asset, ext = rng.choice(_ASSETS), rng.choice(("js", "css"))
        return f"/static/{ext}/{asset}.{_hex(rng, 8)}.{ext}?v={_hex(rng, 12)}"
    if n == 3:
        return f"/images/products/{uid}/{rng.choice(_IMAGE_SIZES)}.jpg?format=webp&quality=80"
    if n == 4:
        return f"/blog/{rng.randrange(2015, 2025)}/{rng.randrange(1, 13):02d}/{_slug(rng)}?ref=rss"
    if n == 5:
        word, page, sort = rng.choice(_WORDS), rng.randrange(1, 9), rng.choice(_SORTS)
        return f"/search?q={word}&page={page}&sort={sort}&lang=en"
    if n == 6:
        top, sub, page = rng.choice(_WORDS), rng.choice(_WORDS), rng.randrange(1, 20)
        return f"/category/{top}/{sub}?page={page}&per_page=48"
    if n == 7:
        if rng.random() < 0.5:
            return rng.choice(_STATIC)
        return f"/account/settings/notifications?tab=email&digest={rng.choice(_DIGESTS)}"
    if n == 8:
        return f"/api/v1/orders/{_uuid(rng)}/items?expand=product"
    if n == 9:
        color, size = rng.choice(_COLORS), rng.choice(_SIZES)
        return f"/products/{_slug(rng, 2)}?color={color}&size={size}&ref=home"
    if n == 10:
        source = rng.choice(_SOURCES)
        return f"/landing?utm_source={source}&utm_medium=email&utm_campaign={_slug(rng, 2)}"
    resource, offset = rng.choice(_RESOURCES), rng.randrange(0, 1000, 20)
    return f"/api/v1/{resource}?limit=20&offset={offset}&order=-created_at"


def _encoded(rng: random.Random) -> str:
    """Percent-encoded UTF-8: ``%20`` in paths, ``+`` for spaces in queries."""
    n = rng.randrange(8)
    if n == 0:
        return f"/wiki/{quote(rng.choice(_TITLES))}?action=view&section={rng.randrange(1, 9)}"
    if n == 1:
        return f"/search?q={quote_plus(rng.choice(_PHRASES))}&lang={rng.choice(_LANGS)}&src=header"
    if n == 2:
        return f"/files/My%20Documents/{quote(rng.choice(_FILES))}"
    if n == 3:
        return f"/users/{quote(rng.choice(_NAMES))}/profile?tab=activity"
    if n == 4:
        return f"/tag/{quote(rng.choice(_TITLES))}?page={rng.randrange(1, 9)}&sort=recent"
    if n == 5:
        city = quote(rng.choice(_TITLES))
        return f"/maps/{city}?q={quote_plus(rng.choice(_PHRASES))}&zoom={rng.randrange(3, 18)}"
    if n == 6:
        return f"/wiki/Caf%C3%A9?q=caf%C3%A9+au+lait&lang={rng.choice(_LANGS)}"
    title, slug = quote(rng.choice(_TITLES)), _slug(rng, 2)
    return f"/shop/{title}/{slug}?q={quote_plus(rng.choice(_PHRASES))}"


# Each breaks a different rule of the strict default policy (docs/rules.md);
# "{p}" is a plain prefix, so the hostile part is not always at the start.
_HOSTILE: Final[tuple[bytes, ...]] = (
    b"{p}/a%zz",  # malformed-escape
    b"{p}/trailing%",
    b"{p}/%u00E9",
    b"/pubmed/search?db=pubmed&term=%C4rzteblatt",  # invalid-utf8 (latin-1 escape)
    b"{p}/%C4rzteblatt",
    b"{p}/%C0%AF",  # overlong '/'
    b"{p}/%ED%A0%80",  # surrogate
    b"/search?q=%FF%FE&page=2&sort=relevance",
    b"{p}/..%2f..%2f..%2fetc/passwd",  # encoded-slash
    b"{p}/files/a%2Fb",
    b"{p}/a%5Cb",  # encoded-backslash
    b"/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",  # dot-segment
    b"{p}/../../etc/passwd",
    b"//evil.example/login?next=/account",  # empty-segment
    b"{p}//admin",
    b"{p}/x%00y",  # forbidden-char
    b"/redirect?to=%0d%0aSet-Cookie:%20admin=1",
    b"{p}/invoice%E2%80%AEfdp.exe",  # bidi override
    b"{p}/a%252e%252e/b",  # double-encoding
    b"{p}/a b",  # raw-char
    b"{p}/caf\xc3\xa9",
    b"/search?q=<script>alert(1)</script>",
    b'{p}/search?q="quoted"&page=1',
    b"{p}/page?tab=1#section",  # fragment
    b"noslash",  # bad-form
)


def _malformed(rng: random.Random, index: int) -> bytes:
    template = _HOSTILE[index % len(_HOSTILE)]
    prefix = rng.choice((b"/api/v1/files", b"/static/assets", b"/users/42/docs", b"/shop/items/7"))
    return template.replace(b"{p}", prefix)


class Corpus(NamedTuple):
    """The targets (bytes, as received) and the kind of each, in a fixed order."""

    targets: tuple[bytes, ...]
    kinds: tuple[Kind, ...]

    def subset(self, kind: Kind) -> tuple[bytes, ...]:
        """The targets of one kind, in corpus order."""
        return tuple(t for t, k in zip(self.targets, self.kinds, strict=True) if k == kind)


def build() -> Corpus:
    """:data:`SIZE` targets in the shares of :data:`SHARES`, shuffled with :data:`SEED`."""
    rng = random.Random(SEED)
    counts = {kind: round(SIZE * share) for kind, share in SHARES.items()}
    counts["plain"] = SIZE - counts["encoded"] - counts["malformed"]
    items: list[tuple[bytes, Kind]] = []
    items += [(_plain(rng).encode("ascii"), "plain") for _ in range(counts["plain"])]
    items += [(_encoded(rng).encode("ascii"), "encoded") for _ in range(counts["encoded"])]
    items += [(_malformed(rng, i), "malformed") for i in range(counts["malformed"])]
    rng.shuffle(items)
    return Corpus(targets=tuple(t for t, _ in items), kinds=tuple(k for _, k in items))


def describe(corpus: Corpus) -> str:
    """The composition of ``corpus``, and what urlguard rejects of each kind."""
    rows = [f"{'kind':<10} {'count':>6} {'share':>7} {'mean B':>7} {'min B':>6} {'max B':>6}"]
    for kind in (*KINDS, None):
        lengths = [len(t) for t in (corpus.targets if kind is None else corpus.subset(kind))]
        rows.append(
            f"{kind or 'all':<10} {len(lengths):>6} {len(lengths) / len(corpus.targets):>7.1%} "
            f"{sum(lengths) / len(lengths):>7.1f} {min(lengths):>6} {max(lengths):>6}"
        )
    rows.append(f"seed {SEED}; {len(set(corpus.targets))} distinct")
    return "\n".join([*rows, *_rejections(corpus)])


def _rejections(corpus: Corpus) -> list[str]:
    """What the strict default policy rejects of each kind, and by which rule."""
    lines = []
    for kind in KINDS:
        rules: Counter[str] = Counter()
        targets = corpus.subset(kind)
        for raw in targets:
            try:
                urlguard.parse_target(raw)
            except urlguard.InvalidTarget as error:
                rules[error.rule] += 1
        detail = ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items()))
        total = f"urlguard rejects {rules.total()}/{len(targets)} {kind}"
        lines.append(f"{total} ({detail})" if detail else total)
    return lines
