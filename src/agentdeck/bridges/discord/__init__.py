"""The Discord bridge (discord.py): ``agentdeck bridge discord``.

``platform`` shows what the core asks (messages, edits, files, typing, prompts
with buttons); ``bot`` takes what discord.py hands over (messages, button
presses, modal submissions, slash commands) and gives it to the core;
``setup`` reads the token and the allow-lists from the settings.
"""
