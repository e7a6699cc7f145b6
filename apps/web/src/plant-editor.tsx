import {
  type NewPlant,
  type PlantPatch,
  type PlantRevision,
  type PlantStoreClient,
  PlantStoreError,
  PlantStorePreconditionFailedError,
} from "@plantstore/client";
import { type ChangeEvent, type FormEvent, useEffect, useRef, useState } from "react";

import { ErrorAlert } from "./error-alert.tsx";

type Props = {
  client: PlantStoreClient;
  /** The plant as the table shows it: on screen at once, while its revision (and ETag) is read. */
  plant: NewPlant;
  onSaved: (plant: NewPlant) => void;
  onDeleted: (id: bigint) => void;
  onClose: () => void;
};

/** A refused save: the revision the edit was based on, the one stored now, and the edit itself. */
type Conflict = { base: NewPlant; current: PlantRevision | undefined; edit: PlantPatch };

const tagText = (tag: string | null | undefined) => (tag === undefined || tag === null ? "(none)" : tag);

/**
 * One plant, edited against the revision it was read at: Save sends `If-Match` with that ETag,
 * so a change made elsewhere meanwhile is never overwritten unseen. On 412 the person sees what
 * changed and chooses: re-apply their edit on the new revision, or discard it.
 */
export function PlantEditor({ client, plant, onSaved, onDeleted, onClose }: Props) {
  const { id } = plant;
  const [revision, setRevision] = useState<PlantRevision | undefined>(undefined);
  const [name, setName] = useState(plant.name);
  const [tag, setTag] = useState(plant.tag ?? "");
  const [error, setError] = useState<unknown>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [conflict, setConflict] = useState<Conflict | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const cancelDelete = useRef<HTMLButtonElement>(null);
  const conflictHeading = useRef<HTMLHeadingElement>(null);

  /** Fields typed into since the plant was opened or last shown as stored. */
  const typed = useRef({ name: false, tag: false });
  /** The fields as typed, for the read that arrives after the typing. */
  const fields = useRef({ name, tag });
  fields.current = { name, tag };
  const typeInto = (field: "name" | "tag", set: (value: string) => void) => (event: ChangeEvent<HTMLInputElement>) => {
    typed.current[field] = true;
    set(event.target.value);
  };

  const show = (read: PlantRevision) => {
    typed.current = { name: false, tag: false };
    setRevision(read);
    setName(read.plant.name);
    setTag(read.plant.tag ?? "");
  };

  useEffect(() => {
    const stop = new AbortController();
    setRevision(undefined);
    setConflict(undefined);
    setConfirming(false);
    setNotice(undefined);
    typed.current = { name: false, tag: false };
    // The table's copy, which the form shows (and the person may edit) until the revision arrives.
    const opened = plant;
    client.getPlant(id, { signal: stop.signal }).then(
      (read) => {
        setRevision(read);
        setError(undefined);
        const { name: nameTyped, tag: tagTyped } = typed.current;
        const changed = read.plant.name !== opened.name || (read.plant.tag ?? null) !== (opened.tag ?? null);
        if ((nameTyped || tagTyped) && changed) {
          // What the person typed before the revision arrived is their edit, made on the table's
          // copy: the stored plant differs from that copy, so the edit was made on a revision they
          // never saw. The form keeps what they see, and they choose as after a 412.
          const { name: typedName, tag: typedTag } = fields.current;
          setConflict({
            base: opened,
            current: read,
            edit: { name: typedName, tag: typedTag === "" ? null : typedTag },
          });
          return;
        }
        // Typing is kept, never overwritten by the read; the fields not typed into show the stored plant.
        if (!nameTyped) setName(read.plant.name);
        if (!tagTyped) setTag(read.plant.tag ?? "");
      },
      (thrown: unknown) => {
        if (!stop.signal.aborted) setError(thrown);
      },
    );
    return () => stop.abort();
  }, [client, id]);

  // Keyboard and screen reader users land on the plant they opened.
  useEffect(() => heading.current?.focus(), []);
  useEffect(() => {
    if (confirming) cancelDelete.current?.focus();
  }, [confirming]);
  useEffect(() => {
    if (conflict !== undefined) conflictHeading.current?.focus();
  }, [conflict]);

  /** The current revision after a 412, or undefined when the plant is gone. */
  const reread = async (): Promise<PlantRevision | undefined> => {
    try {
      return await client.getPlant(id);
    } catch (thrown) {
      if (thrown instanceof PlantStoreError && thrown.status === 404) return undefined;
      throw thrown;
    }
  };

  const save = async (edit: PlantPatch, base: PlantRevision) => {
    setBusy(true);
    setError(undefined);
    setNotice(undefined);
    try {
      const saved = await client.updatePlant(id, edit, { ifMatch: base.etag });
      show(saved);
      setConflict(undefined);
      setNotice("Saved.");
      onSaved(saved.plant);
    } catch (thrown) {
      if (thrown instanceof PlantStorePreconditionFailedError) {
        try {
          setConflict({ base: base.plant, current: await reread(), edit });
        } catch (again) {
          setError(again);
        }
      } else {
        setError(thrown);
      }
    } finally {
      setBusy(false);
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (revision === undefined) return;
    void save({ name, tag: tag === "" ? null : tag }, revision);
  };

  const reapply = () => {
    if (conflict?.current !== undefined) void save(conflict.edit, conflict.current);
  };
  const discard = () => {
    if (conflict?.current !== undefined) show(conflict.current);
    setConflict(undefined);
    setNotice("Your edit was discarded; the form shows the plant as stored now.");
  };

  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      // With the ETag read, a plant changed elsewhere meanwhile is not deleted unseen.
      await client.deletePlant(id, revision === undefined ? {} : { ifMatch: revision.etag });
      onDeleted(id);
    } catch (thrown) {
      setConfirming(false);
      if (thrown instanceof PlantStorePreconditionFailedError) {
        const current = await reread().catch(() => undefined);
        if (current !== undefined) show(current);
        setError(new Error("Not deleted: the plant changed since you opened it. Check it and delete again."));
      } else {
        setError(thrown);
      }
    } finally {
      setBusy(false);
    }
  };

  const idText = id.toString();
  return (
    <section className="editor" aria-labelledby="editor-heading">
      <h2 id="editor-heading" tabIndex={-1} ref={heading}>
        Plant {idText}
      </h2>
      <form aria-label={`Edit plant ${idText}`} onSubmit={submit}>
        <label htmlFor="edit-name">Name</label>
        <input id="edit-name" value={name} onChange={typeInto("name", setName)} />
        <label htmlFor="edit-tag">Tag</label>
        <input id="edit-tag" value={tag} onChange={typeInto("tag", setTag)} />
        <button type="submit" disabled={busy || revision === undefined || conflict !== undefined}>
          Save
        </button>
        <button type="button" disabled={busy} onClick={() => setConfirming(true)}>
          Delete
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </form>
      {notice === undefined ? null : <p role="status">{notice}</p>}
      <ErrorAlert error={error} />
      {conflict === undefined ? null : (
        <div className="conflict" role="group" aria-labelledby="conflict-heading">
          <h3 id="conflict-heading" tabIndex={-1} ref={conflictHeading}>
            {conflict.current === undefined
              ? "This plant was deleted elsewhere: your edit was not saved."
              : "This plant changed since you opened it: your edit was not saved."}
          </h3>
          {conflict.current === undefined ? null : (
            <>
              <table aria-label="What changed">
                <thead>
                  <tr>
                    <th scope="col">Field</th>
                    <th scope="col">When you opened it</th>
                    <th scope="col">Stored now</th>
                    <th scope="col">Your edit</th>
                  </tr>
                </thead>
                <tbody>
                  <tr>
                    <th scope="row">Name</th>
                    <td>{conflict.base.name}</td>
                    <td>{conflict.current.plant.name}</td>
                    <td>{conflict.edit.name ?? conflict.base.name}</td>
                  </tr>
                  <tr>
                    <th scope="row">Tag</th>
                    <td>{tagText(conflict.base.tag)}</td>
                    <td>{tagText(conflict.current.plant.tag)}</td>
                    <td>{tagText(conflict.edit.tag)}</td>
                  </tr>
                </tbody>
              </table>
              <button type="button" disabled={busy} onClick={reapply}>
                Re-apply my edit
              </button>
              <button type="button" disabled={busy} onClick={discard}>
                Discard my edit
              </button>
            </>
          )}
        </div>
      )}
      {confirming ? (
        <div role="alertdialog" aria-labelledby="confirm-delete" className="confirm">
          <p id="confirm-delete">Delete plant {idText}? This cannot be undone.</p>
          <button type="button" ref={cancelDelete} onClick={() => setConfirming(false)}>
            Cancel
          </button>
          <button type="button" disabled={busy} onClick={() => void remove()}>
            Yes, delete
          </button>
        </div>
      ) : null}
    </section>
  );
}
