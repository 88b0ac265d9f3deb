"""Agent homes: find every harness session on a machine and import what is new (``memcli sync``).

The naming rule every session-to-agent mapping uses (``sync`` and the harness hooks alike) is
:func:`memcli.sync.naming.session_agent_id`.
"""
