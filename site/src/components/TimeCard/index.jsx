// The time card's place on the page: the card itself (card.jsx) is a chunk of
// its own (components/Lazy), loaded when the first time answer arrives, so a
// first visit's script does not carry it.

import { lazyView } from '../Lazy/index.jsx';
import { settings, timeError, timeResult } from '../../lib/state.js';
import styles from './style.module.css';

const { View } = lazyView(() => import('./card.jsx'), 'TimeCard');

export function TimeSection() {
  const time = timeResult.value;
  const error = timeError.value;
  const train = settings.value.task === 'train';
  if (!time && !error) {
    return (
      <section class={styles.card} aria-labelledby="time-heading" aria-busy="true">
        <h2 id="time-heading" class={styles.heading}>
          How long and how much
        </h2>
        <p class={styles.lead} role="status">
          Estimating the time… The time model is in the planner's module, which the page loads after
          it has shown the memory estimate.
        </p>
      </section>
    );
  }
  return <View time={time} error={error} train={train} />;
}
