"""Which callback URLs Stepline posts to: https only, public addresses only, unless configured.

A callback URL is given by an API caller, so it is a way to make the server send requests: to the
cloud's metadata address, to a database on the private network (server-side request forgery).
Every address the host resolves to is checked, when the run is started and again before every
attempt; the request is then sent to the checked address itself (the name is used only for the
`Host` header and TLS), so a name that resolves to a public address at the check and to a private
one a moment later (DNS rebinding) still reaches only the checked one. Redirects are never
followed: a 3xx is a failed attempt.

Refused unless allowed: loopback, private (RFC 1918, unique-local), link-local (the metadata
address 169.254.169.254), carrier-grade NAT, multicast, reserved and unspecified addresses —
everything that is not globally routable (`ipaddress`' `is_global`). `allowed_networks` admits
chosen ranges (a receiver on the VPC); `stepline dev` allows http and https to loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from ..errors import StepLineError

__all__ = ["CallbackTarget", "RefusedUrl", "UrlPolicy", "parse_networks"]

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]


class RefusedUrl(StepLineError, ValueError):
    """A callback URL Stepline will not post to; the message says why."""


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise RefusedUrl(f"callbackUrl: the host {host} does not resolve ({error})") from None
    return sorted({str(info[4][0]) for info in infos})


def parse_networks(text: str) -> tuple[IpNetwork, ...]:
    """`10.0.0.0/8,fd00::/8` -> networks (a `ValueError` names the entry that is not one)."""
    networks: list[IpNetwork] = []
    for entry in (e.strip() for e in text.split(",")):
        if entry:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry!r} is not an address range such as 10.0.0.0/8") from None
    return tuple(networks)


@dataclass(frozen=True, slots=True)
class CallbackTarget:
    """A checked URL: where to connect (`address`), and the name and path to ask for there."""

    scheme: str
    host: str
    port: int
    path: str
    address: str

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.path}"


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """The callback URLs this deployment posts to (see the module docstring)."""

    allow_loopback: bool = False
    """`stepline dev`: http or https to 127.0.0.0/8 and ::1 (a receiver on the developer's machine)."""
    allowed_networks: tuple[IpNetwork, ...] = ()
    max_length: int = 2048
    resolve: Resolver = _resolve

    def check(self, url: str) -> CallbackTarget:
        """The target of `url` once its scheme and every address of its host pass; else `RefusedUrl`."""
        parts = self._parts(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = [self._address(a) for a in self.resolve(host, port)]
        if not addresses:
            raise RefusedUrl(f"callbackUrl: the host {host} has no address")
        for address in addresses:
            self._check_address(host, address, parts.scheme)
        path = parts.path or "/"
        return CallbackTarget(
            parts.scheme, host, port, path + (f"?{parts.query}" if parts.query else ""), str(addresses[0])
        )

    def _parts(self, url: str) -> SplitResult:
        if len(url) > self.max_length:
            raise RefusedUrl(f"callbackUrl: longer than {self.max_length} characters")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            raise RefusedUrl("callbackUrl: not a URL") from None
        if (
            parts.scheme not in ("https", "http")
            or not parts.hostname
            or (parts.scheme == "http" and not self.allow_loopback)
        ):
            raise RefusedUrl("callbackUrl: use an https:// URL")
        if parts.username or parts.password:
            raise RefusedUrl("callbackUrl: credentials in the URL are not allowed (sign with the callback secret)")
        if parts.fragment:
            raise RefusedUrl("callbackUrl: a fragment (#...) is not sent to a server; remove it")
        return parts

    @staticmethod
    def _address(text: str) -> IpAddress:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # a scoped IPv6 address keeps its zone out
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        return mapped or address

    def _check_address(self, host: str, address: IpAddress, scheme: str) -> None:
        if self.allow_loopback and address.is_loopback:
            return
        if scheme != "https":
            raise RefusedUrl("callbackUrl: use an https:// URL (http only to this machine, in stepline dev)")
        if any(address in network for network in self.allowed_networks):
            return
        if not address.is_global or address.is_multicast:
            raise RefusedUrl(
                f"callbackUrl: {host} resolves to {address}, a private or reserved address"
                " (allow its range with STEPLINE_CALLBACK_ALLOWED_NETWORKS)"
            )
