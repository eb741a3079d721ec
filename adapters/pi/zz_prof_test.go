package pi
import ("testing";"time";"context";"os";"github.com/agentctl/agentctl/adapters")
func TestZZProf(t *testing.T){ d:="/tmp/pi10k"; if _,err:=os.Stat(d);err!=nil{ s:=time.Now(); GenerateStore(d,10000,1); t.Log("gen",time.Since(s)) }
 a:=New(adapters.Env{Home:d}); s:=time.Now(); got,err:=a.Discover(context.Background()); t.Log("cold",len(got),err,time.Since(s))
 for i:=0;i<3;i++{ s=time.Now(); a.Discover(context.Background()); t.Log("warm",time.Since(s)) }
 s=time.Now(); paths,_:=listSessionFiles(a.layout().roots()); t.Log("list",len(paths),time.Since(s))
 s=time.Now(); for _,p:=range paths{ os.Stat(p) }; t.Log("stats",time.Since(s))
 s=time.Now(); livePis(); t.Log("procs",time.Since(s))
}
