"""The knowledge layer's rows: sources and versions, jobs and stage outputs, publishing, the notes' index."""
