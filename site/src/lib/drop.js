// Dropping a file or text on a drop zone: the model box's config.json and the
// comparison card's probe report share this.

/**
 * An onDrop handler: a dropped file goes to `onFile`, dropped text to
 * `onText`; `setDragging(false)` ends the hover state either way.
 */
export function dropHandler(setDragging, onFile, onText) {
  return (e) => {
    e.preventDefault();
    setDragging(false);
    const file = e.dataTransfer?.files?.[0];
    if (file) {
      onFile(file);
      return;
    }
    const text = e.dataTransfer?.getData('text/plain');
    if (text) onText(text);
  };
}
