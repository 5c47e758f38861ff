"""The file reader and writer behind `ibp-rflvm fit`: headers, row names, text columns."""

import numpy as np
import pandas as pd
import pytest

from ibp_rflvm.plumbing.io import format_number, read_table, write_table


def _read(tmp_path, text, name="x.csv"):
    path = tmp_path / name
    path.write_text(text)
    return read_table(path)


def test_text_column_in_the_middle_is_named_not_the_header_line(tmp_path):
    with pytest.raises(ValueError) as err:
        _read(tmp_path, "a,b,species,c\n1,2,setosa,3\n4,5,virginica,6\n")
    message = str(err.value)
    assert "column 3 ('species')" in message and "line 2" in message
    assert "line 1" not in message
    # Without a header: its number, counted from 1.
    with pytest.raises(ValueError, match=r"column 2 holds text"):
        _read(tmp_path, "1,x,3\n4,y,6\n")


def test_pandas_index_is_read_as_row_names(tmp_path):
    frame = pd.DataFrame({"a": [1.5, 2.0, 3.0], "b": [4.0, np.nan, 6.0]})
    frame.to_csv(tmp_path / "f.csv")
    table = read_table(tmp_path / "f.csv")
    assert table.columns == ["a", "b"] and table.rows == ["0", "1", "2"]
    np.testing.assert_array_equal(table.values, frame.to_numpy())
    assert any("pandas" in note for note in table.notes)


def test_other_row_name_layouts(tmp_path):
    named = _read(tmp_path, "id,a,b\ns1,1,2\ns2,3,4\n")  # a text column first
    assert named.rows == ["s1", "s2"] and named.columns == ["a", "b"] and named.index_label == "id"
    r_style = _read(tmp_path, "a\tb\ns1\t1\t2\ns2\t3\t4\n", "r.tsv")  # R's write.table
    assert r_style.rows == ["s1", "s2"] and r_style.columns == ["a", "b"]
    np.testing.assert_array_equal(r_style.values, [[1, 2], [3, 4]])
    bare = _read(tmp_path, "s1,1,2\ns2,3,4\n")  # no header at all
    assert bare.rows == ["s1", "s2"] and bare.columns is None
    # Repeated text in the first column is a category, not names: refused, naming it.
    with pytest.raises(ValueError, match=r"column 1 \('kind'\) holds text"):
        _read(tmp_path, "kind,a\nx,1\nx,2\n")


def test_pandas_numbered_columns_are_a_header(tmp_path):
    pd.DataFrame(np.arange(12).reshape(4, 3)).to_csv(tmp_path / "n.csv", index=False)
    table = read_table(tmp_path / "n.csv")
    assert table.values.shape == (4, 3) and table.columns == ["0", "1", "2"]
    # Two cells are too few to tell a header from data: read as data.
    assert _read(tmp_path, "0,1\n5,6\n").values.shape == (2, 2)


def test_written_tables_read_back_with_names_and_plain_numbers(tmp_path):
    values = np.array([[-0.0, 1.23456789e-7], [123456789.0, -2.5]])
    path = write_table(tmp_path / "t.csv", values, ["dim1", "dim2"], ["r1", "r2"], "cell")
    lines = path.read_text().splitlines()
    assert lines == ["cell,dim1,dim2", "r1,0,1.23457e-07", "r2,1.23457e+08,-2.5"]
    back = pd.read_csv(path, index_col=0)
    assert list(back.index) == ["r1", "r2"]
    np.testing.assert_allclose(back.to_numpy(), values, rtol=1e-5)
    assert read_table(path).rows == ["r1", "r2"]
    assert format_number(-0.0) == "0" and format_number(np.nan) == "NA"
    numbered = write_table(tmp_path / "u.csv", values, ["a", "b"]).read_text().splitlines()
    assert [ln.split(",")[0] for ln in numbered] == ["row", "1", "2"]
    with pytest.raises(ValueError, match="column names"):
        write_table(tmp_path / "v.csv", values, ["a"])


def test_a_label_column_is_taken_out_by_name_or_number(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(",a,species,b\nr1,1,setosa,2\nr2,3,virginica,4\n")
    table = read_table(path, label_column="species")
    np.testing.assert_array_equal(table.values, [[1, 2], [3, 4]])
    assert table.columns == ["a", "b"] and table.rows == ["r1", "r2"]
    assert table.labels == ["setosa", "virginica"]
    bare = tmp_path / "y.csv"
    bare.write_text("1,x,2\n3,y,4\n")
    table = read_table(bare, label_column="2")
    assert table.labels == ["x", "y"] and table.values.shape == (2, 2) and table.columns is None
    with pytest.raises(ValueError, match="no label column 'kind'.*'species'"):
        read_table(path, label_column="kind")
    np.save(tmp_path / "z.npy", np.zeros((2, 2)))
    with pytest.raises(ValueError, match="needs a text table"):
        read_table(tmp_path / "z.npy", label_column="1")
