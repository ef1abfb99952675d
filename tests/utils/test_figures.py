"""save_figure: writes the file (creating its folder), applies the dpi, and closes the figure."""

from zoo.utils.figures import pyplot, save_figure


def test_save_figure_creates_folder_writes_png_and_closes(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [1, 0])
    path = tmp_path / "a" / "b" / "fig.png"
    assert save_figure(fig, path, dpi=50) == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)
    import matplotlib

    assert matplotlib.get_backend().lower() == "agg"
    fig2, _ = plt.subplots(figsize=(2, 1))
    save_figure(fig2, tmp_path / "big.png", dpi=100)
    from PIL import Image

    assert Image.open(tmp_path / "big.png").size[0] > Image.open(path).size[0]  # the dpi is applied
