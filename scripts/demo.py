"""Build a small TransformerMT from a config, run one forward pass and generate(), and say what happened.

The untrained model emits arbitrary ids; the point is the API: config -> model -> loss -> generate.
"""

import argparse

import torch

from transformer_mt import TransformerMTConfig, TransformerMTForConditionalGeneration


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--position_embedding_type", choices=["sinusoidal", "learned"], default="sinusoidal")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    config = TransformerMTConfig(
        vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
        position_embedding_type=args.position_embedding_type,
    )
    model = TransformerMTForConditionalGeneration(config).eval()
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters, {config.position_embedding_type} "
          f"positions, {config.encoder_layers}+{config.decoder_layers} layers, d_model {config.d_model}")

    input_ids = torch.tensor([[15, 27, 311, 2], [42, 99, 2, 0]])
    attention_mask = (input_ids != config.pad_token_id).long()
    token_type_ids = torch.zeros_like(input_ids)
    labels = torch.tensor([[17, 201, 2], [56, 2, -100]])
    out = model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, labels=labels)
    print(f"forward: logits {tuple(out.logits.shape)}, loss {out.loss.item():.3f} "
          f"(uniform guessing would give ln({config.vocab_size}) = {torch.log(torch.tensor(1000.0)):.3f})")

    greedy = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8)
    beams = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8, num_beams=4)
    print(f"generate (greedy): {greedy.tolist()}")
    print(f"generate (beam 4): {beams.tolist()}")


if __name__ == "__main__":
    main()
