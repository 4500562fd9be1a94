# speedup.gp - the bar chart of scripts/bench-compare.sh: per case, the speedup
# of tjit eager and tjit compiled over PyTorch eager (PyTorch = 1; higher is
# faster). Called as gnuplot -e "out='PNG'; dat='DATA'; ttl='TITLE'" speedup.gp;
# DATA rows are: "case name" tjit-eager tjit-compiled pytorch (NaN: no value).
set terminal pngcairo size 1100,560 font "Sans,10" noenhanced
set output out
set title ttl font "Sans,12"
set ylabel "speedup over PyTorch eager (PyTorch = 1, higher is faster)"
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set grid ytics lc rgb "#dddddd"
set key outside top center horizontal
set xtics nomirror
set ytics nomirror
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#555555"
plot dat using 2:xtic(1) title "tjit eager" lc rgb "#4c72b0", \
     ''  using 3 title "tjit compiled" lc rgb "#dd8452", \
     ''  using 4 title "PyTorch eager" lc rgb "#8c8c8c", \
     ''  using ($0 - 0.27):2:(sprintf("%.2f", $2)) with labels offset 0,0.6 notitle, \
     ''  using ($0):3:(sprintf("%.2f", $3)) with labels offset 0,0.6 notitle
