"""`tf.contrib.training.HParams`, TensorFlow 1.15's hyper-parameter container; the training loops are tf_slim's.

91 ModelZoo files build their configuration as an `HParams` and override it
from a flag (`hparams.parse(FLAGS.hparams)`), so its parsing and type rules are
kept as 1.15 had them: a value keeps the type it was declared with (an int
accepts "3" and 3, never 3.5; a float accepts an int; a bool accepts only a
bool or true/false/1/0; a list stays a list), unknown names and malformed
strings raise ValueError naming them. Protobuf export (`to_proto`) is not kept.
"""
from __future__ import annotations

import json
import numbers
import re
from typing import Any

_PARAM = re.compile(r"""
  (?P<name>[a-zA-Z][\w.]*)        # name: "learning_rate"
  (\[\s*(?P<index>\d+)\s*\])?     # an index: "layers[1]=..." (not kept: ValueError)
  \s*=\s*
  ((?P<val>[^,\[]*)               # one value: "0.1"
   |
   \[(?P<vals>[^\]]*)\])          # a list: "[1, 2, 3]"
  ($|,\s*)""", re.VERBOSE)


def _cast(name: str, param_type: type, value: Any) -> Any:
    """`value` as `param_type` where TensorFlow 1.15 allowed it, else ValueError (hparam.py's rules)."""
    fail = f"Could not cast hparam '{name}' of type '{param_type}' from value {value!r}"
    if issubclass(type(value), param_type) or issubclass(param_type, type(None)):
        return value
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


def _parser(name: str, param_type: type, text: str) -> Any:
    def parse(value: str) -> Any:
        try:
            if param_type is bool and value in ("true", "True", "false", "False"):
                return value in ("true", "True")
            return bool(int(value)) if param_type is bool else param_type(value)
        except ValueError:
            raise ValueError(f"Could not parse hparam '{name}' of type '{param_type}' with value '{value}' in {text}") from None
    return parse


def parse_values(values: str, type_map: dict[str, type], ignore_unknown: bool = False) -> dict[str, Any]:
    """"a=1,b=[2,3],c=x" -> {"a": 1, "b": [2, 3], "c": "x"}, each value parsed as `type_map` says."""
    parsed: dict[str, Any] = {}
    position = 0
    while position < len(values):
        match = _PARAM.match(values, position)
        if match is None:
            raise ValueError(f"Malformed hyperparameter value: {values[position:]}")
        position = match.end()
        name = match.group("name")
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError(f"Unknown hyperparameter type for {name}")
        if match.group("index") is not None:
            raise ValueError(f"{name}[{match.group('index')}]=...: indexed hparam assignment is not supported here")
        if name in parsed:
            raise ValueError(f"Multiple assignments to variable '{name}' in {values}")
        parse = _parser(name, type_map[name], values)
        if match.group("vals") is not None:
            parsed[name] = [parse(item) for item in re.split("[ ,]", match.group("vals")) if item]
        else:
            parsed[name] = parse(match.group("val"))
    return parsed


class HParams:
    """Named hyper-parameters as attributes: `HParams(lr=0.1, layers=[64, 32]).parse("lr=0.2")`."""

    def __init__(self, hparam_def: Any = None, model_structure: Any = None, **kwargs: Any) -> None:
        if hparam_def is not None:
            raise ValueError("HParams(hparam_def=...): building from a HParamDef proto is not supported here")
        self._hparam_types: dict[str, tuple[type, bool]] = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name: str, value: Any) -> None:
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"Multi-valued hyperparameters cannot be empty: {name}")
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name: str, value: Any) -> None:
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list):
            if not is_list:
                raise ValueError(f"Must not pass a list for single-valued parameter: {name}")
            setattr(self, name, [_cast(name, param_type, item) for item in value])
        else:
            if is_list:
                raise ValueError(f"Must pass a list for multi-valued parameter: {name}.")
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name: str) -> None:
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values: str) -> "HParams":
        type_map = {name: param_type for name, (param_type, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict: dict[str, Any]) -> "HParams":
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def parse_json(self, values_json: str) -> "HParams":
        return self.override_from_dict(json.loads(values_json))

    def to_json(self, indent: int | None = None, separators: Any = None, sort_keys: bool = False) -> str:
        values = {name: value for name, value in self.values().items() if not callable(value)}
        return json.dumps(values, indent=indent, separators=separators, sort_keys=sort_keys)

    def values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            kind = f"list<{param_type}>" if is_list else str(param_type)
            fail = f"Hparam '{key}' of type '{kind}' is incompatible with default={default}"
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for item in default if is_list else [default]:
                    _cast(key, param_type, item)
            except ValueError as exc:
                raise ValueError(f"{fail}. {exc}") from None
        return getattr(self, key)

    def set_model_structure(self, model_structure: Any) -> None:
        self._model_structure = model_structure

    def get_model_structure(self) -> Any:
        return self._model_structure

    def __contains__(self, key: str) -> bool:
        return key in self._hparam_types

    def __str__(self) -> str:
        return str(sorted(self.values().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


__all__ = ["HParams", "parse_values"]
