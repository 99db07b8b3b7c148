// The lab's modules, built on demand: the bench and the forensics scripts call this before they
// load a module the default build leaves out (CMakeLists.txt: the targets forensics, the probes
// and forensics modules of build/wasm/bench/, and pool_trace, build/wasm/trace/). Incremental:
// up to date, it costs a second.
//   buildTargets('forensics')   runs scripts/build/build.sh forensics; throws when the build fails
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BUILD = fileURLToPath(new URL('../build/build.sh', import.meta.url));

export function buildTargets(...targets) {
  // its output to stderr: a script's stdout may be JSON (--json)
  execFileSync('bash', [BUILD, ...targets], { stdio: ['ignore', process.stderr, process.stderr] });
}
