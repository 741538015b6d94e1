// "Compare two setups" (issue 18): pin the current estimate, change anything
// in the form, and read both side by side — the peak, each memory component
// and each phase, the time and cost, with the difference — and what was
// changed. The pin is in the link (lib/pin.js), so a reload or a shared link
// shows the same pair. The comparison itself (pinned.jsx) is a chunk loaded
// when a setup is pinned (components/Lazy): a first visit shows only the
// button.

import { pinCurrent, pinned } from '../../lib/pin.js';
import { Card } from '../Card/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

const Pinned = lazyView(() => import('./pinned.jsx'), 'PinnedCompare');
const ID = 'pin-compare-heading';
const TITLE = 'Compare two setups';

function pin() {
  Pinned.load();
  pinCurrent();
}

export function PinCompare({ result }) {
  if (!pinned.value) {
    return (
      <Card id={ID} title={TITLE}>
        <div class={styles.start}>
          <button type="button" class={styles.button} onClick={pin}>
            Pin this estimate
          </button>
          <span class={styles.hint}>
            then change anything and see both side by side, by component and phase, in time and
            cost. The pin is kept in the link.
          </span>
        </div>
      </Card>
    );
  }
  return (
    <Pinned.View
      id={ID}
      title={TITLE}
      result={result}
      fallback={
        // The pinned estimate runs in the comparison's chunk: until it is
        // there, this is what the card is doing.
        <Card id={ID} title={TITLE}>
          <p class={styles.hint}>Estimating the pinned setup ({pinned.value.model.id})…</p>
        </Card>
      }
      failed={(error) => (
        <Card id={ID} title={TITLE}>
          <p class={styles.error} role="alert">
            The comparison could not load: {error.message}
          </p>
        </Card>
      )}
    />
  );
}
