"""Address policy for outbound URL fetches: which hosts and IP addresses a fetch may reach.

Server-side request forgery works by making the service fetch something only *it* can see:
loopback admin ports, the cloud metadata endpoint (169.254.169.254), RFC 1918 neighbours.
This module decides, from a host name and the IP addresses it resolved to, whether the
destination is public, and names the address class when it is not. It does no I/O so the
catalogue can call ``is_public_http_url`` on every record cheaply and ``pipeline.fetch`` can
apply the same rules to the addresses it is about to connect to.

Python's own ``ipaddress.is_global`` is not trusted alone: on 3.11 it calls multicast,
site-local and NAT64 addresses global, so the classes are checked one by one.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from pipeline.types import PipelineError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = frozenset({"http", "https"})

_SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
_IETF_PROTOCOL_ASSIGNMENTS = ipaddress.IPv4Network("192.0.0.0/24")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAME_SUFFIXES = (".localhost", ".local", ".internal")
# inet_aton accepts the legacy forms browsers and libc still honour (2130706433, 0x7f.1, 0177.0.0.1);
# the character check keeps it from accepting trailing garbage after a space.
_LEGACY_IPV4 = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)


def normalise_host(host: str) -> str:
    """Lower-case a host and drop the trailing root dot, so ``Example.COM.`` matches ``example.com``."""
    return host.lower().rstrip(".")


@dataclass(frozen=True)
class Allowlist:
    """Hosts (exact names) and networks that may be reached although they are not public.

    It exists so tests and single-machine deployments can fetch from 127.0.0.1 on purpose;
    it is empty by default, so a fresh install refuses every non-public destination.
    """

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "Allowlist":
        """Split entries into IP networks (a bare address is a /32 or /128) and host names.

        Raises ``ValueError`` for an entry that looks like an address or CIDR but is not
        valid, so a typo such as ``10.0.0.0/33`` fails at start-up instead of silently
        matching nothing.
        """
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                if "/" in entry or ":" in entry or not re.fullmatch(r"[A-Za-z0-9_.-]+", entry):
                    raise ValueError(f"invalid URL allowlist entry: {entry!r}") from None
                hosts.add(normalise_host(entry))
        return cls(frozenset(hosts), tuple(networks))

    @classmethod
    def coerce(cls, value: "Allowlist | Iterable[str]") -> "Allowlist":
        """Accept either a parsed allowlist or its raw entries."""
        return value if isinstance(value, Allowlist) else cls.parse(value)

    def covers_host(self, host: str) -> bool:
        return normalise_host(host) in self.hosts

    def covers_address(self, address: IPAddress) -> bool:
        """True when the address, or the IPv4 address it embeds, is inside an allowed network."""
        candidates = {address, _embedded_ipv4(address) or address}
        return any(candidate in network for candidate in candidates for network in self.networks)


def split_allowlist(setting: str | None) -> tuple[str, ...]:
    """Split the comma-separated ``GNOSI_URL_ALLOWLIST`` setting into trimmed, non-empty entries."""
    return tuple(part.strip() for part in (setting or "").split(",") if part.strip())


def literal_address(host: str) -> IPAddress | None:
    """The IP address a host *is*, when it is a literal, or None for a name.

    Catches the odd IPv4 spellings (decimal, hex, octal, fewer dots) that getaddrinfo would
    turn into an address without any DNS query, so string matching on "127." is not enough.
    """
    host = normalise_host(host.strip("[]"))
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not _LEGACY_IPV4.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64 or 6to4), if any.

    ``::ffff:127.0.0.1`` reaches 127.0.0.1 on a dual-stack socket, and NAT64/6to4 gateways
    forward to the embedded address, so those must be judged by the IPv4 inside.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def blocked_class(address: IPAddress) -> str | None:
    """Name the non-public class of an address ("loopback", "private", …) or None if public."""
    address = _embedded_ipv4(address) or address
    checks: tuple[tuple[str, bool], ...] = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared address space", address in _SHARED_ADDRESS_SPACE),
        ("site-local", isinstance(address, ipaddress.IPv6Address) and address.is_site_local),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("non-public", address in _IETF_PROTOCOL_ASSIGNMENTS or not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def check_addresses(host: str, addresses: Iterable[IPAddress], allowlist: Allowlist) -> None:
    """Refuse with URL_BLOCKED if ANY address is non-public and not allowlisted.

    Every address counts, not just the first, because the connection may end up on any of
    them. The message names the host and the class, never the internal address itself.
    """
    if allowlist.covers_host(host):
        return
    for address in addresses:
        kind = blocked_class(address)
        if kind is not None and not allowlist.covers_address(address):
            raise PipelineError("URL_BLOCKED", f"host {normalise_host(host)!r} has a {kind} address")


def is_local_name(host: str) -> bool:
    """Names that by convention never leave the machine or the site network."""
    host = normalise_host(host)
    return host == "localhost" or host.endswith(_LOCAL_NAME_SUFFIXES)


def is_public_http_url(url: str, allowlist: Allowlist | Iterable[str] = ()) -> bool:
    """Cheap, DNS-free check that a URL is worth handing to ``fetch``.

    True for http(s) URLs with a host and no credentials whose host is neither a non-public
    literal address nor a local-only name, unless the allowlist covers it. A True answer is
    not a promise: ``fetch`` still resolves the name and may refuse it.
    """
    guard = Allowlist.coerce(allowlist)
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return False
    host = parsed.host
    if parsed.scheme not in ALLOWED_SCHEMES or not host or parsed.userinfo:
        return False
    if guard.covers_host(host):
        return True
    address = literal_address(host)
    if address is not None:
        return blocked_class(address) is None or guard.covers_address(address)
    return not is_local_name(host)
