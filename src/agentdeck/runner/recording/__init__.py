"""Recording an agent's model traffic (issue 32.1).

The runner's ``Recorder`` (``service``) is one HTTP proxy on 127.0.0.1 for all the
agents it records: each agent's ``ANTHROPIC_BASE_URL`` points at its own route
there (``seam``), the proxy forwards to the agent's real upstream and streams the
answer back (``proxy``), and writes the agent's cassette (``cassette``) under
``<home>/recordings/`` (``store``).
"""
