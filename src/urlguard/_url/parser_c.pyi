# The compiled parser's signatures: those of urlguard._url.parser_py.
from typing import overload

from .host import Host
from .parser_py import HostValue
from .policy import Policy
from .target import Target

@overload
def parse_target(
    raw: bytes | bytearray | memoryview, policy: Policy | None = None, host: HostValue = None
) -> Target: ...
@overload
def parse_target(raw: str, policy: Policy | None = None, host: HostValue = None) -> Target: ...
def parse_split_target(
    raw_path: bytes | bytearray | memoryview,
    query: bytes | bytearray | memoryview,
    policy: Policy,
    host: HostValue = None,
) -> Target: ...
def host_header(headers: object, known: dict[bytes, Host]) -> Host | bytes | None: ...
