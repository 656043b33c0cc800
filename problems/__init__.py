"""Problems the workbench makes itself: the papers' scenes, synthetic packings, datasets."""

# the workbench package first: it makes BLAS single-threaded (workbench.THREAD_ENV) before numpy loads
import workbench  # noqa: F401
