// Dropping files or text on a drop zone: the model box's config.json, the
// comparison card's probe report and the import card's configuration files
// (several at once) share this.

/**
 * An onDrop handler: dropped files go to `onFile(first, all)`, dropped text
 * to `onText`; `setDragging(false)` ends the hover state either way.
 */
export function dropHandler(setDragging, onFile, onText) {
  return (e) => {
    e.preventDefault();
    setDragging(false);
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length) {
      onFile(files[0], files);
      return;
    }
    const text = e.dataTransfer?.getData('text/plain');
    if (text) onText(text);
  };
}
