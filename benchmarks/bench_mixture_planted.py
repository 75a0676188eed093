"""Robust mixture on planted sets: outlier precision, recall, inlier ARI and exact counts.

Three kinds of planted data (generated here; seeds 0-2): four 2-D clusters of
different shapes plus 5% uniform points at least 14 from every centre; five
3-D clusters plus 12% far uniform points; four anisotropic 5-D clusters of
60-500 points in 10% and 40% uniform noise over their bounding box.  Each is
fitted by RobustGaussianMixture(covariance_type="full") at its defaults, with
the planted count given and with the default count.  Prints the worst of the
three seeds and the median CPU seconds of a fit.

    python benchmarks/bench_mixture_planted.py
"""
import numpy as np, warnings, time
from sklearn.metrics import adjusted_rand_score as ari
from robustclust import RobustGaussianMixture
def far_uniform(rng, n, centres, lo, hi, gap, p):
    out=[]
    while len(out)<n:
        z=rng.uniform(lo,hi,p)
        if np.min(np.linalg.norm(centres-z,axis=1))>=gap: out.append(z)
    return np.array(out)
def shapes(seed):
    rng=np.random.RandomState(seed)
    covs=[np.array([[5,0],[0,.4]]),np.array([[.4,0],[0,5]]),np.array([[1,-.8],[-.8,1]]),.3*np.eye(2)]
    cs=np.array([[0,0],[10,10],[-10,10],[10,-8]],float)
    X=np.vstack([rng.multivariate_normal(c,S,140) for c,S in zip(cs,covs)]); y=np.repeat(range(4),140)
    O=far_uniform(rng,28,cs,-30,30,14,2); return np.vstack([X,O]),np.r_[y,-np.ones(28,int)],4
def five(seed,frac=0.12):
    rng=np.random.RandomState(seed); cs=rng.uniform(-10,10,(5,3))*1.0
    while min(np.linalg.norm(cs[i]-cs[j]) for i in range(5) for j in range(i)) < 5: cs=rng.uniform(-10,10,(5,3))
    X=np.vstack([c+rng.randn(80,3) for c in cs]); y=np.repeat(range(5),80)
    n=int(frac*400/(1-frac)); O=far_uniform(rng,n,cs,-40,40,8,3); return np.vstack([X,O]),np.r_[y,-np.ones(n,int)],5
def aniso(seed,frac):
    rng=np.random.RandomState(seed); p=5; sizes=[60,150,300,500]; X=[];y=[]
    cs=rng.uniform(-15,15,(4,p))
    for k,m in enumerate(sizes):
        A=rng.randn(p,p); S=A@A.T/p+0.1*np.eye(p); X.append(rng.multivariate_normal(cs[k],S,m)); y+= [k]*m
    X=np.vstack(X); n=int(frac*len(X)/(1-frac)); lo,hi=X.min(0)-5,X.max(0)+5
    O=rng.uniform(lo,hi,(n,p)); return np.vstack([X,O]),np.r_[y,-np.ones(n,int)],4
for name,gen in [("shapes",shapes),("five12",five),("aniso10",lambda s:aniso(s,.1)),("aniso40",lambda s:aniso(s,.4))]:
    for count in [True, False]:
        res=[]
        for seed in range(3):
            X,y,k=gen(seed); out=y<0; s=int(out.sum())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t=time.process_time()
                m=RobustGaussianMixture(k,covariance_type="full",n_outliers=s if count else None,random_state=0).fit(X)
                t=time.process_time()-t
            f=m.outlier_mask_; prec=(f&out).sum()/max(f.sum(),1); rec=(f&out).sum()/s
            res.append((prec,rec,ari(y[~out],m.labels_[~out]), m.n_outliers_==s, t))
        r=np.array(res,float)
        print(f"{name:8s} count={'given' if count else 'default'}: precision min {r[:,0].min():.2f} recall min {r[:,1].min():.2f} inlierARI min {r[:,2].min():.3f} exact {int(r[:,3].sum())}/3 cpu {np.median(r[:,4]):.2f}s", flush=True)
