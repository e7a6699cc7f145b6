import type { NewPlant } from "@plantstore/client";
import { useEffect, useRef } from "react";

import { FIRST_TABLE_MARK } from "./first-table-mark.ts";
import { PrintableText } from "./printable-text.tsx";

type Props = { plants: readonly NewPlant[]; onOpen: (plant: NewPlant) => void };

/** The plants of one page, ordered by id; ids are bigints written out digit for digit. */
export function PlantTable({ plants, onOpen }: Props) {
  const marked = useRef(false);
  useEffect(() => {
    if (marked.current || plants.length === 0) return;
    marked.current = true;
    performance.mark(FIRST_TABLE_MARK, { detail: { rows: plants.length } });
  }, [plants]);

  return (
    <table aria-label="Plants">
      <thead>
        <tr>
          <th scope="col">Id</th>
          <th scope="col">Name</th>
          <th scope="col">Tag</th>
          <th scope="col">
            <span className="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {plants.map((plant) => (
          <tr key={plant.id.toString()}>
            <td className="id">{plant.id.toString()}</td>
            <td>
              <PrintableText text={plant.name} />
            </td>
            <td>{plant.tag === undefined ? null : <PrintableText text={plant.tag} />}</td>
            <td>
              <button type="button" aria-label={`Open plant ${plant.id}`} onClick={() => onOpen(plant)}>
                Open
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
