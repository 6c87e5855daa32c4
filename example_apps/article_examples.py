"""Run urlguard over every example URL of the articles on URL encoding that
urlguard follows, and print each verdict.

    python example_apps/article_examples.py

Each row: the article, the target as sent, the policy, and either the
decoded segments and query, or the rule that rejects it. What each article
argues, and which rule it led to, is in docs/design-notes.md.
"""

from __future__ import annotations

import sys

from urlguard import InvalidTarget, Policy, parse_target

STRICT = Policy()
KEEP_SLASH = Policy(encoded_slash="keep")
SPLIT = Policy(path_params="split")
LATIN1 = Policy(allowed_ranges=[(0x20, 0x7E), (0xA0, 0xFF)])

#: Short name -> the article's title, author and year.
ARTICLES: dict[str, str] = {
    "Proper encoding": '"Proper URL Encoding and Decoding" (2011)',
    "Every web developer": (
        '"What every web developer must know about URL encoding" (Lunatech, 2009)'
    ),
    "Escape a URI": '"How do you escape a complete URI?" (2012)',
    "Percent-encoding": '"Percent-encoding" (Wikipedia)',
}

# (the article's short name and the example, raw target, policy name, policy)
EXAMPLES: list[tuple[str, bytes, str, Policy]] = [
    (
        "Proper encoding: legal and unambiguous",
        b"http://example.com/doc@1:5/?back_uri=http://user:password@example.com/?foo%3Dbar",
        "strict",
        STRICT,
    ),
    (
        "Proper encoding: %C4 is not UTF-8",
        b"http://www.ncbi.nlm.nih.gov/pubmed?term=%C4rzteblatt",
        "strict",
        STRICT,
    ),
    (
        "Proper encoding: valid UTF-8, 起司堡",
        b"http://www.ncbi.nlm.nih.gov/pubmed/?term=%E8%B5%B7%E5%8F%B8%E5%A0%A1",
        "strict",
        STRICT,
    ),
    (
        "Proper encoding: ...outside Latin-1",
        b"http://www.ncbi.nlm.nih.gov/pubmed/?term=%E8%B5%B7%E5%8F%B8%E5%A0%A1",
        "latin-1",
        LATIN1,
    ),
    (
        "Every web developer: path parameter",
        b"https://www.lunatech.com:8080/file;p=1?q=2",
        "split",
        SPLIT,
    ),
    (
        "Every web developer: '+' differs by part",
        b"http://example.com/blue+light%20blue?blue%2Blight+blue",
        "strict",
        STRICT,
    ),
    (
        "Every web developer: nuts",
        b"http://example.com/:@-._~!$&'()*+,=;:@-._~!$&'()*+,=:@-._~!$&'()*+,==?/?:@-._~!$'()*+,;=/?:@-._~!$'()*+,;==",
        "split",
        SPLIT,
    ),
    (
        "Every web developer: analyse before decoding",
        b"http://example.com/blue%2Fred%3Fand+green",
        "strict",
        STRICT,
    ),
    (
        "Every web developer: ...%2F kept in the segment",
        b"http://example.com/blue%2Fred%3Fand+green",
        "keep-slash",
        KEEP_SLASH,
    ),
    (
        "Every web developer: encode each part",
        b"http://example.com/a%2Fb%3Fc",
        "keep-slash",
        KEEP_SLASH,
    ),
    (
        "Every web developer: query value a&b==c",
        b"http://example.com/?query=a%26b==c",
        "strict",
        STRICT,
    ),
    (
        "Escape a URI: Helen Ødegård, cleaned",
        b"http://example.com/admin/login?name=Helen%20%C3%98deg%C3%A5rd&gender=f",
        "strict",
        STRICT,
    ),
    (
        "Escape a URI: ...not cleaned",
        "http://example.com/admin/login?name=Helen Ødegård&gender=f".encode(),
        "strict",
        STRICT,
    ),
    (
        "Escape a URI: %23 escaped already",
        b"http://example.com/admin/login?redirect=http://example.com/news%23funny&name=Helen",
        "strict",
        STRICT,
    ),
    (
        "Escape a URI: '#' left raw",
        b"http://example.com/admin/login?redirect=http://example.com/news#funny&name=Helen",
        "strict",
        STRICT,
    ),
    ("Percent-encoding: binary data %0F", b"/data?b=%0F", "strict", STRICT),
    ("Percent-encoding: %uxxxx", b"/%u00E9", "strict", STRICT),
]


def verdict(raw: bytes, policy: Policy) -> str:
    try:
        target = parse_target(raw, policy)
    except InvalidTarget as error:
        return f"rejected: {error.rule} ({error.component}, offset {error.offset})"
    parts = [f"segments={list(target.segments)}"]
    if any(target.params):
        parts.append(f"params={[list(p) for p in target.params]}")
    if target.query:
        parts.append(f"query={[list(q) for q in target.query]}")
    return "ok: " + " ".join(parts)


def shown(raw: bytes) -> str:
    """The target for display: bytes outside printable ASCII as \\xHH."""
    text = "".join(chr(b) if 0x21 <= b <= 0x7E and b != 0x5C else f"\\x{b:02x}" for b in raw)
    return text if len(text) <= 90 else text[:87] + "..."


def main() -> int:
    for name, title in ARTICLES.items():
        print(f"{name}: {title}")
    print()
    for source, raw, policy_name, policy in EXAMPLES:
        print(f"{source}  [{policy_name}]")
        print(f"    {shown(raw)}")
        print(f"    -> {verdict(raw, policy)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
