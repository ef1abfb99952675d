import torch

from zoo_tasks.worldmodel.tokens import BinSupport, symexp, symlog


def test_symlog_round_trip():
    x = torch.linspace(-50, 50, 1001, dtype=torch.float64)
    assert torch.allclose(symexp(symlog(x)), x, atol=1e-9)
    assert torch.equal(torch.sign(symlog(x)), torch.sign(x))


def test_hl_gauss_rows_sum_to_one_and_centre_on_the_value():
    support = BinSupport(bins=256, bound=2.5, rel_sigma=0.75)
    x = torch.tensor([-100.0, -3.0, -0.2, 0.0, 0.5, 4.0, 100.0])
    p = support.hl_gauss(x)
    assert p.shape == (7, 256)
    assert torch.allclose(p.sum(-1), torch.ones(7), atol=1e-5)
    assert (p >= 0).all()
    peak = support.centres()[p.argmax(-1)]
    assert torch.allclose(peak, symlog(x).clamp(-2.5, 2.5), atol=support.width)


def test_bin_round_trip_within_a_bin():
    support = BinSupport(bins=256, bound=2.5)
    x = torch.linspace(-5, 5, 201)
    back = support.decode(support.hl_gauss(x))
    # one bin of symlog space, mapped back through symexp's slope at |x|
    tol = support.width * (1 + x.abs())
    assert ((back - x).abs() <= tol).all()
    assert (back - x).abs().max() < 0.1


def test_out_of_support_values_clip_to_the_edge():
    support = BinSupport(bins=64, bound=1.0)
    p = support.hl_gauss(torch.tensor([1e6]))
    assert p[0, -1] == p[0].max()
