import { render } from 'preact';
import { App } from './components/App/index.jsx';
import { loadEstimator } from './lib/estimator.js';
import { warmLane } from './lib/planner.js';
import { registerServiceWorker } from './lib/service-worker.js';
import './styles/global.css';

// Start fetching and compiling the WebAssembly core before the first render
// (which takes a few hundred milliseconds on a slow CPU), not in the App's
// first effect after it: the download and the streaming compile overlap the
// render. The App asks again and gets the same promise.
loadEstimator().catch(() => {});
// The estimates' Web Worker boots meanwhile and takes the same compiled module.
warmLane('estimate');

render(<App />, document.getElementById('app'));

// The service worker registers after the first estimate is painted
// (components/Results); a visit that paints none registers it 10 s after the
// load event (lib/service-worker.js).
window.addEventListener('load', () => setTimeout(registerServiceWorker, 10000));
