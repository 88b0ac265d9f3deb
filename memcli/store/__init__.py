"""The on-disk store: layout and agent ids (``layout``), JSONL files (``jsonl``), the agent lock
(``lock``), the state cache and id index (``state``, ``id_index``), and ``agent.AgentStore``
which ties them together. Import the submodules directly; this package imports nothing so that
``memcli`` starts fast."""
