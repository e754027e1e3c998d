"""Drive connectors: the folders a notebook links, listed and downloaded for the sync
(``base`` says what a connector offers; ``folder`` and ``google_drive`` are the two there are)."""
