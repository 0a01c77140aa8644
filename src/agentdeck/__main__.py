from agentdeck.cli import main

main()
