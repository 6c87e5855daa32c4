"""Small applications that tests/test_servers.py runs behind real servers.

Each answers every request it receives with JSON saying what urlguard stored
(``segments``, ``query``, the ``raw`` target it read) and what the server
handed over, so a test on a raw socket can tell the server's answer, urlguard's
answer and the application's answer apart.
"""
