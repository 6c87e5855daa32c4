"""The URL itself, sans-IO: its grammar, the policy, the two parsers and the sending side."""
