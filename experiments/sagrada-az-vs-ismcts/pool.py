import json,sys,math
def wilson(k,n,z=1.959964):
    p=k/n; d=1+z*z/n; c=(p+z*z/(2*n))/d; h=z*math.sqrt(p*(1-p)/n+z*z/(4*n*n))/d
    return 100*(c-h),100*(c+h)
w=g=0
for f in sys.argv[1:]:
    d=json.load(open(f)); a=d['agents'][0]
    print(f, a.get('wins'), a.get('draws'), a.get('losses'), a.get('score'), a.get('mean_move_ms') )
    w+=a['wins']+0.5*a.get('draws',0); g+=a['wins']+a['draws']+a['losses']
lo,hi=wilson(w,g); print(f"pooled {w}/{g} = {100*w/g:.1f}% [{lo:.1f}, {hi:.1f}]")
