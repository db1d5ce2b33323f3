"""Findings: what the doctor tells the user. A problem breaks the pack (an alert that cannot fire, a panel
that would be empty, a rule group that is missing or failing) and makes the exit code 1; so does a check
that could not be asked (the server failed to answer it): it is never a pass. A note is shown but does not
fail (a single cluster without a cluster label, a panel empty by design on a healthy fleet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from obspack.doctor.checks import Check


class Level(str, Enum):
    PROBLEM = "problem"
    UNCHECKED = "not checked"
    NOTE = "note"


class Topic(str, Enum):
    BACKEND = "backend"
    SOURCE = "source"
    ALERT = "alert"
    PANEL = "panel"
    DASHBOARD = "dashboard"
    VARIABLE = "variable"
    RULES = "rules"
    AUTOSCALER = "autoscaler"
    COST = "cost"


@dataclass(frozen=True)
class Fix:
    """A config change that addresses a finding: the key path in obspack.yaml and its new value."""

    path: tuple[str, ...]
    value: object
    comment: str = ""


@dataclass(frozen=True)
class Finding:
    level: Level
    topic: Topic
    subject: str  # the alert, panel, dashboard, group, source or variable it is about
    message: str
    causes: tuple[Check, ...] = field(default=(), compare=False)  # failing selectors, for the advice
    fixes: tuple[Fix, ...] = field(default=(), compare=False)
    action: str = field(default="", compare=False)  # what to do outside obspack.yaml

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.level.value, self.topic.value, self.subject)


def problem(topic: Topic, subject: str, message: str, **extra: object) -> Finding:
    return Finding(Level.PROBLEM, topic, subject, message, **extra)  # type: ignore[arg-type]


def note(topic: Topic, subject: str, message: str, **extra: object) -> Finding:
    return Finding(Level.NOTE, topic, subject, message, **extra)  # type: ignore[arg-type]


def unchecked(topic: Topic, subject: str, message: str, **extra: object) -> Finding:
    return Finding(Level.UNCHECKED, topic, subject, message, **extra)  # type: ignore[arg-type]


def counted(n: int, noun: str, plural: str = "") -> str:
    """`1 pod`, `2 pods`, `0 pods`: a count with its noun in the right number (`plural` where the noun does
    not take an s)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
