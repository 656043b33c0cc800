"""Problems the workbench makes itself: the papers' scenes, synthetic packings, datasets."""
