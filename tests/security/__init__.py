"""The red-team corpus: each test plays a hostile model at one door (a way out of
its sandbox, its profile, its branch or its deck) and fails if the door opens.
Add a test here whenever a door is found."""
