"""`url_href(text)`: what JavaScript's `new URL(text).href` gives, or `ValueError` where it throws.

A compact WHATWG URL parser for absolute URLs (there is never a base URL): scheme and host
lowercased, default ports dropped, dot segments resolved, IPv4/IPv6 hosts canonicalised, characters
percent-encoded by the WHATWG encode sets, `data:` and other opaque URLs kept as they are. Non-ASCII
host names are mapped with IDNA 2003 nameprep (keeping UTS #46's deviation characters such as `ß`),
a close approximation of the UTS #46 mapping that browsers and Node use.
"""

from __future__ import annotations

import ipaddress
import re
from encodings import idna

__all__ = ["url_href"]

_DEFAULT_PORTS: dict[str, str | None] = {
    "ftp": "21",
    "file": None,
    "http": "80",
    "https": "443",
    "ws": "80",
    "wss": "443",
}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/:<>?@[\\]^|")
_FORBIDDEN_DOMAIN = _FORBIDDEN_HOST | frozenset("%\x7f") | frozenset(chr(c) for c in range(0x20))
_C0: frozenset[str] = frozenset()
_FRAGMENT = frozenset(' "<>`')
_QUERY = frozenset(' "#<>')
_SPECIAL_QUERY = _QUERY | {"'"}
_PATH = _QUERY | frozenset("?`{}")  # Node's URL (Ada) does not encode "^" in paths yet
_USERINFO = _PATH | frozenset("^/:;=@[\\]|")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")
_DEVIATION = re.compile("([\u00df\u03c2\u200c\u200d])")
_DRIVE = re.compile(r"[A-Za-z][:|]")


def _encode(text: str, encode_set: frozenset[str]) -> str:
    out: list[str] = []
    for char in text:
        if (" " <= char < "\x7f") and char not in encode_set:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(out)


def url_href(text: str) -> str:
    """The serialised form of the absolute URL `text`; raises `ValueError` if it is not one."""
    text = re.sub(r"[\t\n\r]", "", text.strip("".join(chr(c) for c in range(0x21))))
    match = _SCHEME.match(text)
    if match is None:
        raise ValueError("Invalid URL")
    scheme, rest = match.group()[:-1].lower(), text[match.end() :]
    rest, fragment = _split(rest, "#")
    if scheme == "file":
        head = _file(rest)
    elif scheme in _DEFAULT_PORTS:
        head = _special(scheme, rest)
    else:
        head = _non_special(scheme, rest)
    return head + ("" if fragment is None else "#" + _encode(fragment, _FRAGMENT))


def _split(text: str, separator: str) -> tuple[str, str | None]:
    head, found, tail = text.partition(separator)
    return head, (tail if found else None)


def _special(scheme: str, rest: str) -> str:
    rest, query = _split(rest, "?")
    rest = rest.replace("\\", "/").lstrip("/")
    end = rest.find("/")
    end = len(rest) if end < 0 else end
    userinfo, host, port = _authority(rest[:end], scheme)
    if not host:
        raise ValueError("Invalid URL")
    href = f"{scheme}://{userinfo}{host}{port}{_path(rest[end:], special=True)}"
    return href if query is None else href + "?" + _encode(query, _SPECIAL_QUERY)


def _authority(authority: str, scheme: str) -> tuple[str, str, str]:
    credentials, at, host_port = authority.rpartition("@")
    userinfo = ""
    if at:
        user, colon, password = credentials.partition(":")
        userinfo = _encode(user, _USERINFO) + (":" + _encode(password, _USERINFO) if colon and password else "")
        userinfo = f"{userinfo}@" if userinfo else ""
        if not host_port:
            raise ValueError("Invalid URL")
    bracket = host_port.rfind("]")
    colon = host_port.find(":", bracket + 1)
    host, port = (host_port, "") if colon < 0 else (host_port[:colon], host_port[colon + 1 :])
    if colon == 0:
        raise ValueError("Invalid URL")
    if port and (not port.isascii() or not port.isdigit() or int(port) > 65535):
        raise ValueError("Invalid URL")
    port = str(int(port)) if port else ""
    port = "" if port == _DEFAULT_PORTS.get(scheme) or not port else ":" + port
    special = scheme in _DEFAULT_PORTS
    return userinfo, _host(host) if special else _opaque_host(host), port


def _host(host: str) -> str:
    if host.startswith("["):
        return _ipv6(host)
    raw = re.sub(rb"%([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), host.encode("utf-8", "surrogatepass"))
    domain = raw.decode("utf-8", "replace")
    domain = ".".join(_ascii_label(label) for label in re.split("[.\u3002\uff0e\uff61]", domain))
    if not domain or any(char in _FORBIDDEN_DOMAIN for char in domain):
        raise ValueError("Invalid URL")
    return _ipv4(domain) if _ends_in_number(domain) else domain


def _ascii_label(label: str) -> str:
    # UTS #46 non-transitional: nameprep's mapping, except that the deviation characters stay.
    if label.isascii():
        return label.lower()
    try:
        mapped = "".join(piece if piece in _DEVIATIONS else idna.nameprep(piece) for piece in _DEVIATION.split(label))
    except UnicodeError as error:
        raise ValueError("Invalid URL") from error
    return mapped.lower() if mapped.isascii() else "xn--" + mapped.encode("punycode").decode("ascii")


def _opaque_host(host: str) -> str:
    if host.startswith("["):
        return _ipv6(host)
    if any(char in _FORBIDDEN_HOST for char in host):
        raise ValueError("Invalid URL")
    return _encode(host, _C0)


def _ipv6(host: str) -> str:
    if not host.endswith("]") or "%" in host:
        raise ValueError("Invalid URL")
    try:
        packed = ipaddress.IPv6Address(host[1:-1]).packed
    except ValueError as error:
        raise ValueError("Invalid URL") from error
    pieces = [packed[i] << 8 | packed[i + 1] for i in range(0, 16, 2)]
    start, length = -1, 1
    for i in range(8):
        run = next((j for j in range(i, 8) if pieces[j] != 0), 8) - i
        if run > length:
            start, length = i, run
    if start < 0:
        return "[" + ":".join(f"{piece:x}" for piece in pieces) + "]"
    left = ":".join(f"{piece:x}" for piece in pieces[:start])
    right = ":".join(f"{piece:x}" for piece in pieces[start + length :])
    return f"[{left}::{right}]"


def _ends_in_number(domain: str) -> bool:
    labels = domain.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    return (last != "" and last.isascii() and last.isdigit()) or bool(re.fullmatch(r"0[xX][0-9A-Fa-f]*", last))


def _ipv4(domain: str) -> str:
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise ValueError("Invalid URL")
    numbers = [_ipv4_number(part) for part in parts]
    if any(number > 255 for number in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise ValueError("Invalid URL")
    address = numbers[-1] + sum(number << (8 * (3 - i)) for i, number in enumerate(numbers[:-1]))
    return ".".join(str(address >> shift & 255) for shift in (24, 16, 8, 0))


def _ipv4_number(part: str) -> int:
    radix = 10
    if part[:2].lower() == "0x":
        part, radix = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        part, radix = part[1:], 8
    if part == "":
        if radix == 10:
            raise ValueError("Invalid URL")
        return 0
    digits = "0123456789abcdef"[:radix]
    if not all(char in digits for char in part.lower()):
        raise ValueError("Invalid URL")
    return int(part, radix)


def _path(path: str, *, special: bool, file: bool = False) -> str:
    if special:
        path = path.replace("\\", "/")
    segments: list[str] = []
    raw = path[1:].split("/") if path.startswith("/") else path.split("/")
    for index, segment in enumerate(raw):
        last = index == len(raw) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            had_segments = bool(segments)
            if segments and not (file and len(segments) == 1 and re.match("[A-Za-z]:", segments[0])):
                segments.pop()
            if last and (special or had_segments):  # Node (Ada) leaves "foo://h/.." with no path
                segments.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                segments.append("")
        else:
            if file and not segments and _DRIVE.fullmatch(segment):
                segment = segment[0] + ":"
            segments.append(_encode(segment, _PATH))
    if not special and path == "":
        return ""
    return "".join("/" + segment for segment in segments)


def _file(rest: str) -> str:
    rest, query = _split(rest, "?")
    rest, host = rest.replace("\\", "/"), ""
    if rest.startswith("//"):
        end = rest.find("/", 2)
        end = len(rest) if end < 0 else end
        candidate = rest[2:end]
        if _DRIVE.fullmatch(candidate):
            rest = rest[2:]
        else:
            host, rest = candidate, rest[end:]
            host = "" if not host else _host(host)
            host = "" if host == "localhost" else host
    href = f"file://{host}{_path(rest, special=True, file=True)}"
    return href if query is None else href + "?" + _encode(query, _SPECIAL_QUERY)


def _non_special(scheme: str, rest: str) -> str:
    rest, query = _split(rest, "?")
    if rest.startswith("//"):
        end = rest.find("/", 2)
        end = len(rest) if end < 0 else end
        userinfo, host, port = _authority(rest[2:end], scheme)
        head = f"{scheme}://{userinfo}{host}{port}{_path(rest[end:], special=False)}"
    elif rest.startswith("/"):
        path = _path(rest, special=False)
        head = scheme + ":" + ("/." + path if path.startswith("//") else path)
    else:
        head = scheme + ":" + _encode(rest, _C0)
    return head if query is None else head + "?" + _encode(query, _QUERY)
