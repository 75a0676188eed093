"""The estimators: thin scikit-learn classes that assemble the solver core.

* :mod:`.base`: the fit template, new points, attributes, model-file hooks;
* :mod:`.kmeans`: :class:`RobustKMeans`;
* :mod:`.mixture`: :class:`RobustGaussianMixture`;
* :mod:`.kernel`: :class:`KernelRobustKMeans`, :class:`KernelRobustGaussianMixture`;
* :mod:`.kernels`: kernel evaluation, checks, centring, gamma, the kernel starts.
"""

from .kernel import KernelRobustGaussianMixture, KernelRobustKMeans
from .kmeans import RobustKMeans
from .mixture import RobustGaussianMixture

__all__ = ["KernelRobustGaussianMixture", "KernelRobustKMeans", "RobustGaussianMixture",
           "RobustKMeans"]
