"""The Slack bridge: slack-bolt in Socket Mode on the platform-neutral core.

``platform.py`` is the core's ``Platform`` over the Web API; ``app.py`` hands
bolt's events, button presses, modals and the ``/agentdeck`` command to the
core; ``setup.py`` reads the tokens and runs it all.
"""
