// Remove build output (compiled lib/ and the labextension built into the Python package).
const fs = require('fs');
for (const p of ['lib', 'tsconfig.tsbuildinfo', '../jupyter_agent/labextension']) {
  fs.rmSync(p, { recursive: true, force: true });
}
