"""Problems the workbench makes itself: the seeds' scenes, synthetic packings, datasets."""
