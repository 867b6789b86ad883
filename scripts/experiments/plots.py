"""plots.py: the gnuplot script of a clustered bar chart, as the experiments' reports draw them
(ordering_report.py, torch_report.py, intra_report.py; this folder is on sys.path as the
scripts' own)."""


def clustered_bars(png, title, ylabel, dat, names, key="outside right top"):
    """clustered_bars returns a gnuplot script drawing dat (a row per group: its label, then one
    column per name in names) as clustered bars into png, with y from 0."""
    cols = ", ".join("'%s' using %d:xtic(1) title '%s'" % (dat, i + 2, n)
                     for i, n in enumerate(names))
    return """reset
set terminal pngcairo size 900,480 noenhanced
set output '%s'
set title '%s'
set ylabel '%s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key %s
set grid ytics
set yrange [0:*]
plot %s
""" % (png, title, ylabel, key, cols)
