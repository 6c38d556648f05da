"""The ``quotaledger`` command-line interface: ``cli`` builds the app, ``commands/`` holds one module
per command group, ``views/`` the Rich rendering."""
